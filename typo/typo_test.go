package typo

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"read", "read", 0},
		{"", "read", 4},
		{"read", "", 4},
		{"reda", "read", 1},        // a swap of neighbours is one edit
		{"chanel", "channel", 1},   // a letter left out
		{"channnel", "channel", 1}, // one too many
		{"voltaje", "voltage", 1},  // one wrong
		{"max_stepz", "max_steps", 1},
		{"ca", "abc", 3}, // optimal string alignment: no edit after a swap
		{"kitten", "sitting", 3},
		{"curent", "current", 1}, {"vaccum", "vacuum", 1}, {"klystorn", "klystron", 1},
		{"volatge", "voltage", 1}, {"temprature", "temperature", 1}, {"ab", "ba", 1},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestMaxEdits(t *testing.T) {
	for n, want := range map[int]int{0: 0, 4: 0, 5: 1, 7: 1, 8: 2, 20: 2} {
		if got := MaxEdits(n); got != want {
			t.Errorf("MaxEdits(%d) = %d, want %d", n, got, want)
		}
	}
}

func FuzzDistance(f *testing.F) {
	f.Add("read", "reda")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Distance(a, b)
		if d != Distance(b, a) || d < 0 || d > max(len(a), len(b)) || (d == 0) != (a == b) {
			t.Fatalf("Distance(%q, %q) = %d", a, b, d)
		}
	})
}
