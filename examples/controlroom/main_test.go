package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/demo/controlroom/plant"
)

// The demo answers every control-room demo question with its facts.
func TestControlRoomDemoAnswersEveryQuestion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := demo(ctx, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	// Why this demo writes while the commands refuse by default.
	if !strings.Contains(s, "Writes are enabled in this demo") || !strings.Contains(s, "refuse writes until\ncontrol_system.writes_enabled: true") {
		t.Errorf("the banner does not say why the demo writes:\n%s", s)
	}
	for i, d := range plant.Demo {
		start := strings.Index(s, "> "+d.Question)
		if start < 0 {
			t.Fatalf("%q not asked:\n%s", d.Question, s)
		}
		end := len(s)
		if i+1 < len(plant.Demo) {
			end = strings.Index(s, "> "+plant.Demo[i+1].Question)
		}
		for _, f := range d.Facts {
			if !strings.Contains(s[start:end], f) {
				t.Errorf("answer to %q lacks %q:\n%s", d.Question, f, s[start:end])
			}
		}
	}
}
