package memory

import (
	"encoding/binary"
	"slices"
)

// packedMeta is how the store keeps a checkpoint's metadata: its pairs in
// key order in one string, each key and value preceded by its length as a
// uvarint. A map kept per thread was a tenth of a turn's garbage to copy,
// and the store holding every idle thread's map (and the strings in it)
// made each garbage collection mark about ten objects more per thread; a
// string is one object the collector does not look into.
type packedMeta string

// packMeta packs m; equal maps pack to equal strings.
func packMeta(m map[string]string) packedMeta {
	if len(m) == 0 {
		return ""
	}
	var keysBuf [16]string
	keys := keysBuf[:0]
	size := 0
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v) + 2*binary.MaxVarintLen32
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, m[k])
	}
	return packedMeta(b)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// next returns the string at p's start and what follows it.
func (p packedMeta) next() (string, packedMeta) {
	var n uint64
	i := 0
	for shift := uint(0); ; shift += 7 {
		c := p[i]
		i++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	p = p[i:]
	return string(p[:n]), p[n:]
}

// all yields the pairs in key order; the strings share p's memory.
func (p packedMeta) all(yield func(k, v string) bool) {
	for len(p) > 0 {
		var k, v string
		k, p = p.next()
		v, p = p.next()
		if !yield(k, v) {
			return
		}
	}
}

// unpack returns the metadata as a new map (nil when there is none).
func (p packedMeta) unpack() map[string]string {
	if p == "" {
		return nil
	}
	m := make(map[string]string)
	for k, v := range p.all {
		m[k] = v
	}
	return m
}

// matches reports whether p has every pair of filter (checkpoint.MatchMetadata).
func (p packedMeta) matches(filter map[string]string) bool {
	for fk, fv := range filter {
		found := false
		for k, v := range p.all {
			if k == fk {
				found = v == fv
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// equals reports whether p holds exactly m, without packing m.
func (p packedMeta) equals(m map[string]string) bool {
	n := 0
	for k, v := range p.all {
		if w, ok := m[k]; !ok || w != v {
			return false
		}
		n++
	}
	return n == len(m)
}
