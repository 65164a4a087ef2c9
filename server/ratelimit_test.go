package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestRateLimiterBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newRateLimiter(2, time.Now)
		steps := []struct {
			sleep time.Duration
			key   string
			ok    bool
			wait  time.Duration
		}{
			{0, "a", true, 0},
			{0, "a", true, 0},
			{0, "a", false, 30 * time.Second}, // a minute's worth spent; one token per 30 s
			{0, "b", true, 0},                 // buckets are per principal
			{29 * time.Second, "a", false, time.Second},
			{time.Second, "a", true, 0},
			{0, "a", false, 30 * time.Second},
			{10 * time.Minute, "a", true, 0}, // refills up to the capacity only
			{0, "a", true, 0},
			{0, "a", false, 30 * time.Second},
		}
		for i, st := range steps {
			time.Sleep(st.sleep)
			ok, wait := l.allow(st.key)
			if ok != st.ok || (!ok && (wait-st.wait).Abs() > time.Millisecond) {
				t.Fatalf("step %d (%s): ok %v wait %v, want %v %v", i, st.key, ok, wait, st.ok, st.wait)
			}
		}
		var none *rateLimiter
		if ok, _ := none.allow("a"); !ok {
			t.Fatal("no limit refused a request")
		}
	})
}

func TestRequestsPerMinuteOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := New(Config{
			Runner: newScriptedRunner(),
			Limits: Limits{
				RequestsPerMinute: 2,
			},
			Auth: Auth{
				Principals: []Principal{{Name: "alice", KeySHA256: HashKey(keyAlice)}, {Name: "bob", KeySHA256: HashKey(keyBob)}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		get := func(path, key string) *httptest.ResponseRecorder {
			req := httptest.NewRequest("GET", "http://localhost"+path, nil)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, req)
			return rec
		}
		for i := 0; i < 2; i++ {
			if rec := get("/v1/models", keyAlice); rec.Code != http.StatusOK {
				t.Fatalf("request %d: %d", i, rec.Code)
			}
		}
		rec := get("/api/threads", keyAlice)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "30" ||
			!strings.Contains(rec.Body.String(), `"code":"rate_limit_exceeded"`) || rec.Header().Get("x-should-retry") == "false" {
			t.Fatalf("third request: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		if rec := get("/v1/models", keyBob); rec.Code != http.StatusOK {
			t.Fatalf("bob: %d", rec.Code)
		}
		if rec := get("/healthz", ""); rec.Code != http.StatusOK {
			t.Fatalf("healthz: %d", rec.Code)
		}
		if rec := get("/v1/models", "sk-wrong"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("a wrong key is 401 before any limit: %d", rec.Code)
		}
		time.Sleep(30 * time.Second)
		if rec := get("/v1/models", keyAlice); rec.Code != http.StatusOK {
			t.Fatalf("after Retry-After: %d %s", rec.Code, rec.Body)
		}
	})
}

func TestRequestsPerMinuteNegative(t *testing.T) {
	if _, err := New(Config{Runner: newScriptedRunner(), Limits: Limits{RequestsPerMinute: -1}}); err == nil {
		t.Fatal("negative RequestsPerMinute accepted")
	}
}
