package artifacts

import (
	"container/list"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/capgraph/capgraph/artifactview/chart"
	"github.com/capgraph/capgraph/capabilities"
)

// Key is the key artifact URLs are signed with: one derived from secret
// when it is set, else from the API keys' digests (stable across restarts
// and replicas with the same keys; anyone who can read the digests can
// sign, so set a secret where that matters).
func Key(secret []byte, keyDigests []string) []byte {
	h := hmac.New(sha256.New, []byte("capgraph artifact urls"))
	if len(secret) > 0 {
		h.Write([]byte("secret\x00"))
		h.Write(secret)
		return h.Sum(nil)
	}
	digests := make([]string, 0, len(keyDigests))
	for _, d := range keyDigests {
		digests = append(digests, strings.ToLower(d))
	}
	slices.Sort(digests)
	h.Write([]byte("keys\x00" + strings.Join(digests, "\x00")))
	return h.Sum(nil)
}

// Sign signs thread, artifact and expiry with key: 22 characters of
// base64url HMAC-SHA256 (128 bits).
func Sign(key []byte, thread, id string, exp int64) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(thread + "\x00" + id + "\x00" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:22]
}

// Valid reports whether sig is the signature of thread, artifact and
// expiry (in constant time).
func Valid(key []byte, thread, id string, exp int64, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(Sign(key, thread, id, exp)))
}

// Turn is the turn an artifact id names ("t3.p1.s2.0" → 3).
func Turn(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "t")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	return n, ok && err == nil && n > 0
}

// imageExts are the picture suffixes, by the media type they serve.
var imageExts = map[string]string{"svg": "image/svg+xml", "png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

// MediaType is the media type of a picture suffix ("" for none).
func MediaType(ext string) string { return imageExts[ext] }

// SplitImageExt splits a picture's file name into the artifact id and its
// suffix; a name without a picture suffix is all id.
func SplitImageExt(name string) (id, ext string) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return name, ""
	}
	if _, ok := imageExts[name[i+1:]]; ok {
		return name[:i], name[i+1:]
	}
	return name, ""
}

// ImageExt is the suffix of an artifact's picture for a Markdown image
// ("" when it has none to serve).
func ImageExt(a capabilities.Artifact) string {
	switch {
	case charted(a):
		return string(chart.SVG)
	case a.Figure != nil && len(a.Figure.Data) > 0:
		for ext, mt := range imageExts {
			if mt == a.Figure.MediaType {
				return ext
			}
		}
	}
	return ""
}

// Cache keeps drawn pictures by the artifact's content, so repeated loads
// of a chat (every browser showing it) draw once.
type Cache struct {
	mu    sync.Mutex
	max   int // bytes
	size  int
	order *list.List // of *cachedImage, most recent first
	byKey map[string]*list.Element
}

type cachedImage struct {
	key  string
	data []byte
}

// NewCache returns a cache holding at most maxBytes of pictures; a
// picture above a quarter of it is drawn and not kept.
func NewCache(maxBytes int) *Cache {
	return &Cache{max: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

// charted reports whether package chart draws a's picture: a time series
// or an x–y series (a scan, a profile).
func charted(a capabilities.Artifact) bool { return a.TimeSeries != nil || a.XY != nil }

// Draw draws a time series or x–y artifact in format f, or returns the
// picture drawn before.
func (c *Cache) Draw(a capabilities.Artifact, f chart.Format) ([]byte, error) {
	b, err := json.Marshal(struct {
		TimeSeries *capabilities.TimeSeries `json:"t,omitempty"`
		XY         *capabilities.XY         `json:"xy,omitempty"`
	}{a.TimeSeries, a.XY})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(string(f)+"\x00"+a.Title+"\x00"), b...))
	key := string(sum[:])
	c.mu.Lock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		data := e.Value.(*cachedImage).data
		c.mu.Unlock()
		return data, nil
	}
	c.mu.Unlock()
	data, err := chart.Draw(a, f)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; !ok && len(data) <= c.max/4 {
		c.byKey[key] = c.order.PushFront(&cachedImage{key: key, data: data})
		c.size += len(data)
		for c.size > c.max {
			e := c.order.Back()
			ci := e.Value.(*cachedImage)
			c.order.Remove(e)
			delete(c.byKey, ci.key)
			c.size -= len(ci.data)
		}
	}
	return data, nil
}
