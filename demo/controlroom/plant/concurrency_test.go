package plant_test

import (
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/demo/controlroom/plant"
)

// TestConcurrentUse exercises reads, writes, archive queries and fault
// injection from several goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	p, _ := newPlant(t, plant.Config{Faults: plant.Faults{ReadTimeouts: 5}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				_, _ = p.Read("SR:DCCT:CURRENT")
				if _, err := p.Write("BTS:MAG:Q2:CURRENT", float64(90+g+i%5)); err != nil {
					t.Errorf("write: %v", err)
				}
				if _, err := p.History("SR:C01:BPM1:X", t0.Add(-10*time.Minute), t0); err != nil {
					t.Errorf("history: %v", err)
				}
				if _, err := p.Find("beam current", 0); err != nil {
					t.Errorf("find: %v", err)
				}
				if i == 25 {
					p.InjectFaults(plant.Faults{})
				}
			}
		})
	}
	wg.Wait()
	sp, err := p.Setpoint("BTS:MAG:Q2:CURRENT")
	if err != nil || sp < 90 || sp > 97 {
		t.Errorf("final setpoint %g, %v", sp, err)
	}
}
