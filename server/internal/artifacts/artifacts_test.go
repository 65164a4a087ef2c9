package artifacts

import (
	"testing"

	"github.com/capgraph/capgraph/artifactview/chart"
	"github.com/capgraph/capgraph/capabilities"
)

// A signature binds the thread, the artifact and the expiry: changing any
// of them, or the key, makes it invalid; the same keys sign the same
// (replicas), whatever the case or order of their digests.
func TestSignatureBindsThreadArtifactAndExpiry(t *testing.T) {
	key := Key(nil, []string{"AB", "cd"})
	if string(key) != string(Key(nil, []string{"cd", "ab"})) {
		t.Fatal("the same API keys give another signing key")
	}
	sig := Sign(key, "th", "t1.p1.s0.0", 5)
	if len(sig) != 22 || !Valid(key, "th", "t1.p1.s0.0", 5, sig) {
		t.Fatalf("signature %q does not verify", sig)
	}
	secret := Key([]byte("a secret of 16+ bytes"), []string{"ab"})
	for name, ok := range map[string]bool{
		"another thread":   Valid(key, "th2", "t1.p1.s0.0", 5, sig),
		"another artifact": Valid(key, "th", "t1.p1.s0.1", 5, sig),
		"another expiry":   Valid(key, "th", "t1.p1.s0.0", 6, sig),
		"another key":      Valid(secret, "th", "t1.p1.s0.0", 5, sig),
		"no signature":     Valid(key, "th", "t1.p1.s0.0", 5, ""),
	} {
		if ok {
			t.Errorf("%s: the signature still verifies", name)
		}
	}
}

func TestTurnAndImageNames(t *testing.T) {
	for id, want := range map[string]int{"t3.p1.s2.0": 3, "t12.p0.s0.1": 12, "t0.p1": 0, "x3.p1": 0, "t3": 0, "t-1.p1": 0} {
		if n, ok := Turn(id); ok != (want > 0) || ok && n != want {
			t.Errorf("Turn(%q) = %d, %v; want %d", id, n, ok, want)
		}
	}
	for name, want := range map[string][2]string{"t1.p1.s0.0.svg": {"t1.p1.s0.0", "svg"}, "t1.p1.s0.0": {"t1.p1.s0.0", ""}, "t1.p1.s0.0.exe": {"t1.p1.s0.0.exe", ""}} {
		if id, ext := SplitImageExt(name); id != want[0] || ext != want[1] {
			t.Errorf("SplitImageExt(%q) = %q, %q", name, id, ext)
		}
	}
	if MediaType("png") != "image/png" || MediaType("exe") != "" {
		t.Error("media types")
	}
	if ImageExt(capabilities.Artifact{}) != "" {
		t.Error("an artifact without a picture has a picture suffix")
	}
}

// The cache draws a picture once and keeps no more than it may hold.
func TestCacheDrawsOnceWithinItsSize(t *testing.T) {
	a := capabilities.Artifact{ID: "t1.p1.s0.0", Kind: capabilities.ArtifactTimeSeries, Title: "Q1", TimeSeries: &capabilities.TimeSeries{
		Series: []capabilities.Series{{Name: "Q1", Units: "A", TimesMs: []int64{0, 60000}, Values: []float64{1, 2}}}}}
	c := NewCache(1 << 20)
	first, err := c.Draw(a, chart.SVG)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Draw(a, chart.SVG)
	if err != nil || &first[0] != &again[0] {
		t.Fatalf("drawn again instead of kept (%v)", err)
	}
	if c.size != len(first) || c.order.Len() != 1 {
		t.Fatalf("cache holds %d bytes in %d pictures", c.size, c.order.Len())
	}
	small := NewCache(4 * len(first) / 3)
	if _, err := small.Draw(a, chart.SVG); err != nil || small.order.Len() != 0 {
		t.Fatalf("a picture above a quarter of the cache was kept (%v)", err)
	}
}
