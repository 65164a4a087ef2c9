package chart

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

func TestDemoWrite(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	var ss []capabilities.Series
	for c, name := range []string{"SR:RF:CAV1:VOLT", "SR:RF:CAV2:VOLT", "SR:RF:CAV3:VOLT", "SR:RF:CAV4:VOLT"} {
		s := capabilities.Series{Name: name, Units: "kV"}
		for i := range 120 {
			s.Add(t0.Add(time.Duration(i)*time.Minute), 4.8+0.01*math.Sin(float64(i)/10+float64(c)))
		}
		ss = append(ss, s)
	}
	p := capabilities.Series{Name: "SR:DCCT", Units: "mA"}
	for i := range 120 {
		p.Add(t0.Add(time.Duration(i)*time.Minute), 500-float64(i)/10)
	}
	ss = append(ss, p)
	for _, f := range []Format{SVG, PNG} {
		b, err := Draw(capabilities.NewTimeSeries("RF cavity voltage, last 2 hours", ss...), f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile("/tmp/chartdemo/demo."+string(f), b, 0o644)
		t.Log(f, len(b))
	}
}
