package plant_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// Questions as operators type them: abbreviations, typos, missing
// apostrophes, units, "sector 3"/"sec 3"/"S3", channel names in lower case.
// Each runs on the finder alone and on the compiled control-room agent with
// no model (offline), which must plan the capabilities and find exactly the
// channels listed.

var (
	readPlan    = []string{"channel_finding", "channel_read"}
	historyPlan = []string{"channel_finding", "archiver_retrieval"}
	listPlan    = []string{"channel_finding"}
)

// phrasing is a question that names channels that exist.
type phrasing struct {
	q    string
	plan []string
	want []string
}

// each expands a pattern with %d over ns: each("SR:RF:CAV%d:VOLT", 1, 2).
func each(pattern string, ns ...int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf(pattern, n)
	}
	return out
}

var (
	dcct        = []string{"SR:DCCT:CURRENT"}
	s3Vacuum    = []string{"SR:C03:VAC:GAUGE1", "SR:C03:VAC:GAUGE2", "SR:C03:VAC:PUMP:CURRENT"}
	s3Gauges    = []string{"SR:C03:VAC:GAUGE1", "SR:C03:VAC:GAUGE2"}
	cavVolts    = each("SR:RF:CAV%d:VOLT", 1, 2, 3, 4)
	sector1BPMs = []string{"SR:C01:BPM1:X", "SR:C01:BPM1:Y", "SR:C01:BPM2:X", "SR:C01:BPM2:Y",
		"SR:C01:BPM3:X", "SR:C01:BPM3:Y", "SR:C01:BPM4:X", "SR:C01:BPM4:Y"}
	klystrons = append(each("LINAC:KLY%d:HV", 1, 2, 3, 4), each("LINAC:KLY%d:POWER", 1, 2, 3, 4)...)
)

var phrasings = []phrasing{
	// The beam current, every way it is asked for.
	{"What is the beam current?", readPlan, dcct},
	{"whats the beam curent", readPlan, dcct},
	{"What's the beam current?", readPlan, dcct},
	{"beam current?", readPlan, dcct},
	{"dcct", readPlan, dcct},
	{"DCCT reading pls", readPlan, dcct},
	{"ring current", readPlan, dcct},
	{"ring current in mA", readPlan, dcct},
	{"stored current right now", readPlan, dcct},
	{"sr:dcct:current value", readPlan, dcct},
	{"whats teh beam current", readPlan, dcct},
	{"booster current", readPlan, []string{"BR:BEAM:CURRENT"}},
	// Vacuum by sector: "sector 3", "sec 3", "S3", "cell 3", "sector three", typos.
	{"What is the vacuum pressure in sector 3?", readPlan, s3Gauges},
	{"vaccum in sector 3", readPlan, s3Vacuum},
	{"vac sec 3", readPlan, s3Vacuum},
	{"S3 vacuum", readPlan, s3Vacuum},
	{"S03 vacuum pressure", readPlan, s3Gauges},
	{"vacuum pressure sector 03", readPlan, s3Gauges},
	{"vacuum pressure in sector three", readPlan, s3Gauges},
	{"pressure in cell 3", readPlan, s3Vacuum},
	{"ion pump current sector 12", readPlan, []string{"SR:C12:VAC:PUMP:CURRENT"}},
	// RF.
	{"What is the RF cavity voltage?", readPlan, cavVolts},
	{"RF cav 2 volts", readPlan, []string{"SR:RF:CAV2:VOLT"}},
	{"cavity 2 voltage", readPlan, []string{"SR:RF:CAV2:VOLT"}},
	{"rf cav2 voltage in kV", readPlan, []string{"SR:RF:CAV2:VOLT"}},
	{"gap voltage of cavity 3", readPlan, []string{"SR:RF:CAV3:VOLT"}},
	{"volatge of cavity 2", readPlan, []string{"SR:RF:CAV2:VOLT"}},
	{"refl power cav 4", readPlan, []string{"SR:RF:CAV4:REFL_POWER"}},
	{"fwd power cavity 1", readPlan, []string{"SR:RF:CAV1:FWD_POWER"}},
	{"rf frequency", readPlan, []string{"SR:RF:FREQ"}},
	{"master oscillator freq in MHz", readPlan, []string{"SR:RF:FREQ"}},
	{"temp of cav 1", readPlan, []string{"SR:RF:CAV1:TEMP"}},
	{"cavity temperatures", readPlan, each("SR:RF:CAV%d:TEMP", 1, 2, 3, 4)},
	// Linac and klystrons.
	{"klystron 3 power", readPlan, []string{"LINAC:KLY3:POWER"}},
	{"kly 2 hv", readPlan, []string{"LINAC:KLY2:HV"}},
	{"klystron voltages", readPlan, each("LINAC:KLY%d:HV", 1, 2, 3, 4)},
	{"klystorn 1 power", readPlan, []string{"LINAC:KLY1:POWER"}},
	{"gun voltage", readPlan, []string{"LINAC:GUN:VOLT"}},
	{"linac energy in MeV", readPlan, []string{"LINAC:ENERGY"}},
	// Beam parameters.
	{"horizontal tune", readPlan, []string{"SR:BEAM:TUNE:X"}},
	{"tunes", readPlan, []string{"SR:BEAM:TUNE:X", "SR:BEAM:TUNE:Y"}},
	{"what's the lifetime", readPlan, []string{"SR:BEAM:LIFETIME"}},
	{"lifetme?", readPlan, []string{"SR:BEAM:LIFETIME"}},
	{"beam energy GeV", readPlan, []string{"SR:BEAM:ENERGY"}},
	{"orbit in sector 1", readPlan, sector1BPMs},
	{"BPM 2 sector 4 horizontal", readPlan, []string{"SR:C04:BPM2:X"}},
	{"injected charge", readPlan, []string{"BTS:CHARGE"}},
	{"bunch charge in nC", readPlan, []string{"BTS:CHARGE"}},
	// Temperatures and magnets.
	{"air temp sector 5", readPlan, []string{"SR:C05:TEMP:AIR"}},
	{"magnet water temperature S7", readPlan, []string{"SR:C07:TEMP:MAG"}},
	{"temprature sector 3 air", readPlan, []string{"SR:C03:TEMP:AIR"}},
	{"Q1 current in the BTS", readPlan, []string{"BTS:MAG:Q1:CURRENT"}},
	{"bts q3 current", readPlan, []string{"BTS:MAG:Q3:CURRENT"}},
	{"focusing quad current sector 2", readPlan, []string{"SR:C02:QF:CURRENT"}},
	{"QD current sector 6", readPlan, []string{"SR:C06:QD:CURRENT"}},
	{"quadrupol current S2", readPlan, []string{"SR:C02:QD:CURRENT", "SR:C02:QF:CURRENT"}},
	{"booster dipole current", readPlan, []string{"BR:MAG:BEND:CURRENT"}},
	// History.
	{"Show me the RF cavity voltage over the last 2 hours", historyPlan, cavVolts},
	{"beam curent over the last 2 hours", historyPlan, dcct},
	{"vaccum sec 3 since yesterday", historyPlan, s3Vacuum},
	{"klystron 2 power history", historyPlan, []string{"LINAC:KLY2:POWER"}},
	{"how did the rf cav 1 voltage change over the past day", historyPlan, []string{"SR:RF:CAV1:VOLT"}},
	{"trend of the dcct since yesterday", historyPlan, dcct},
	{"avg vacuum S3 last 24 hours", historyPlan, s3Vacuum},
	// Which channels exist.
	{"Which channels measure the vacuum in sector 3?", listPlan, s3Vacuum},
	{"list the klystron channels", listPlan, klystrons},
}

// miss is a question about something the machine does not have: the answer
// says what does not exist and what does.
type miss struct {
	q    string
	plan []string
	says []string
}

var misses = []miss{
	{"What is the vacuum in sector 42?", readPlan, []string{"There is no sector 42", "sectors 1 to 12", `Channels for "vacuum" (36)`, "SR:C01:VAC:GAUGE1"}},
	{"temperature of the klystron", readPlan, []string{`No channel has "temperature" together with "klystron"`,
		`Channels for "klystron": ` + strings.Join(slices.Sorted(slices.Values(klystrons)), ", "), `Channels for "temperature" (28)`}},
	{"RF cavity 7 voltage", readPlan, []string{"There is no RF cavity 7", "RF cavities 1 to 4", "SR:RF:CAV1:VOLT"}},
	{"klystron 9 power", readPlan, []string{"There is no klystron 9", "klystrons 1 to 4", "LINAC:KLY1:POWER"}},
	{"klystron 3 temperature", readPlan, []string{`No channel has "temperature" together with "klystron 3"`, "LINAC:KLY3:HV, LINAC:KLY3:POWER"}},
	{"booster vacuum", readPlan, []string{`No channel has "vacuum" together with "booster"`, "BR:RF:VOLT"}},
	{"beam size", readPlan, []string{`No channel matches "size"`, `Channels for "beam" (`}},
	{"humidity in sector 3", listPlan, []string{`No channel matches "humidity"`, `Channels for "sector 3" (15)`}},
	{"gauge 3 sector 2 pressure", readPlan, []string{"There is no ion gauge 3", "ion gauges 1 and 2"}},
	{"vacuum in sector 42 over the last hour", historyPlan, []string{"There is no sector 42", "sectors 1 to 12"}},
}

func TestFindOperatorPhrasings(t *testing.T) {
	if len(phrasings) < 40 {
		t.Fatalf("only %d phrasings", len(phrasings))
	}
	p, _ := newPlant(t, plant.Config{})
	for _, ph := range phrasings {
		t.Run(ph.q, func(t *testing.T) {
			res, err := p.Find(ph.q, 0)
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if got, want := slices.Sorted(slices.Values(res.Channels)), slices.Sorted(slices.Values(ph.want)); !slices.Equal(got, want) {
				t.Errorf("found %v, want %v", got, want)
			}
		})
	}
}

func TestFindSaysWhatDoesNotExist(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	for _, m := range misses {
		t.Run(m.q, func(t *testing.T) {
			res, err := p.Find(m.q, 0)
			var nm *plant.NoMatch
			if !errors.As(err, &nm) || !errors.Is(err, plant.ErrNoMatch) || len(res.Channels) != 0 {
				t.Fatalf("Find = %v, %v; want a *NoMatch", res.Channels, err)
			}
			for _, s := range m.says {
				if !strings.Contains(nm.Explain(), s) {
					t.Errorf("explanation lacks %q:\n%s", s, nm.Explain())
				}
			}
		})
	}
}

// How a query was read is part of the answer: corrected and ignored words.
func TestFindReportsCorrectionsAndIgnoredWords(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	res, err := p.Find("whats teh beam curent", 0)
	if err != nil || !slices.Equal(res.Channels, dcct) {
		t.Fatalf("Find = %v, %v", res.Channels, err)
	}
	if !slices.Equal(res.Corrected, []plant.Correction{{From: "curent", To: "current"}}) || !slices.Equal(res.Ignored, []string{"teh"}) {
		t.Errorf("corrected %v, ignored %v", res.Corrected, res.Ignored)
	}
	sum := plant.ChannelAddresses{Query: res.Query, Channels: res.Channels, Corrected: res.Corrected, Ignored: res.Ignored}.Summary()
	if want := `Found 1 channel for "whats teh beam curent" (read "curent" as "current"; no channel matches "teh", so it was left out): SR:DCCT:CURRENT`; sum != want {
		t.Errorf("summary %q\nwant    %q", sum, want)
	}
	// A word no channel has is not dropped when the rest is vague: "beam"
	// alone would stand for a hundred channels.
	if _, err := p.Find("beam size", 0); !errors.Is(err, plant.ErrNoMatch) {
		t.Errorf("beam size: %v", err)
	}
	// A request with nothing in it names what exists.
	_, err = p.Find("what is it?", 0)
	var nm *plant.NoMatch
	if !errors.As(err, &nm) || !nm.Empty || !strings.Contains(nm.Explain(), "such as beam current, beam lifetime") {
		t.Errorf("empty request: %v", err)
	}
}

// offlineAgent is the compiled control-room agent with no model.
func offlineAgent(t *testing.T) (*agent.Agent, *plant.Plant) {
	t.Helper()
	p, _ := newPlant(t, plant.Config{Seed: 1})
	reg := capabilities.NewRegistry()
	if err := plant.Register(reg, p); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return a, p
}

// offlineTurn is one answered turn on its own thread.
type offlineTurn struct {
	plans  [][]string
	failed []string // steps that ended with an error
	answer *state.Message
	found  *plant.ChannelAddresses
}

func ask(t *testing.T, a *agent.Agent, thread, q string) offlineTurn {
	t.Helper()
	var o offlineTurn
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: q}) {
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
		switch ev.Type {
		case agent.EventPlan:
			var caps []string
			for _, st := range ev.Plan.Steps {
				if st.Capability != state.NodeRespond {
					caps = append(caps, st.Capability)
				}
			}
			o.plans = append(o.plans, caps)
		case agent.EventStepEnd:
			if ev.Err != "" {
				o.failed = append(o.failed, ev.Capability+": "+ev.Err)
			}
		case agent.EventMessage:
			o.answer = ev.Message
		}
	}
	s, _, err := a.State(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Context.Entries() {
		if e.Type == plant.ChannelAddressesType && e.Turn == s.Turn.Number {
			o.found = &plant.ChannelAddresses{}
			if err := json.Unmarshal(e.Value, o.found); err != nil {
				t.Fatal(err)
			}
		}
	}
	if o.answer == nil {
		t.Fatalf("%q: no message", q)
	}
	return o
}

// checkAnswered: one plan, the expected capabilities, no failed step, an
// offline answer (not an error report).
func (o offlineTurn) checkAnswered(t *testing.T, plan []string) {
	t.Helper()
	if len(o.plans) != 1 || !slices.Equal(o.plans[0], plan) {
		t.Errorf("plans %v, want one: %v", o.plans, plan)
	}
	if len(o.failed) > 0 {
		t.Errorf("failed steps: %v", o.failed)
	}
	if o.answer.Kind != state.KindAnswer || !strings.HasPrefix(o.answer.Content, nodes.OfflineNotice) {
		t.Errorf("message (%s):\n%s", o.answer.Kind, o.answer.Content)
	}
}

func TestOfflineAgentOperatorPhrasings(t *testing.T) {
	a, p := offlineAgent(t)
	for i, ph := range phrasings {
		t.Run(ph.q, func(t *testing.T) {
			o := ask(t, a, fmt.Sprint("ph", i), ph.q)
			o.checkAnswered(t, ph.plan)
			if o.found == nil {
				t.Fatal("no channel_finding result")
			}
			if got, want := slices.Sorted(slices.Values(o.found.Channels)), slices.Sorted(slices.Values(ph.want)); !slices.Equal(got, want) {
				t.Errorf("found %v, want %v", got, want)
			}
			// The answer gives every wanted channel's value (or history)
			// and no other channel's.
			for _, c := range p.Channels() {
				var shown bool
				switch {
				case slices.Equal(ph.plan, readPlan):
					shown = strings.Contains(o.answer.Content, c+" = ")
				case slices.Equal(ph.plan, historyPlan):
					shown = strings.Contains(o.answer.Content, c+": ") && strings.Contains(o.answer.Content, "samples")
				default:
					shown = strings.Contains(o.answer.Content, c)
				}
				if want := slices.Contains(ph.want, c); shown != want {
					t.Errorf("%s shown %v, want %v:\n%s", c, shown, want, o.answer.Content)
				}
			}
		})
	}
}

func TestOfflineAgentSaysWhatDoesNotExist(t *testing.T) {
	a, _ := offlineAgent(t)
	for i, m := range misses {
		t.Run(m.q, func(t *testing.T) {
			o := ask(t, a, fmt.Sprint("miss", i), m.q)
			o.checkAnswered(t, m.plan)
			if o.found == nil || o.found.NotFound == nil || len(o.found.Channels) != 0 {
				t.Fatalf("finding result %+v", o.found)
			}
			for _, s := range m.says {
				if !strings.Contains(o.answer.Content, s) {
					t.Errorf("answer lacks %q:\n%s", s, o.answer.Content)
				}
			}
			if strings.Contains(o.answer.Content, " = ") {
				t.Errorf("the answer reads values although nothing matched:\n%s", o.answer.Content)
			}
		})
	}
}

// The four questions of issue 11, on the compiled agent offline, with the
// answer the operator reads.

func TestOfflineRFCavityVoltageIsRead(t *testing.T) {
	a, _ := offlineAgent(t)
	o := ask(t, a, "rf", "What is the RF cavity voltage?")
	o.checkAnswered(t, readPlan)
	body := strings.TrimPrefix(o.answer.Content, nodes.OfflineNotice)
	if strings.Contains(body, "could not match") {
		t.Fatalf("not matched:\n%s", body)
	}
	want := "\n\nResults for: What is the RF cavity voltage?\n\n" +
		`• Found 4 channels for "What is the RF cavity voltage?": SR:RF:CAV1:VOLT, SR:RF:CAV2:VOLT, SR:RF:CAV3:VOLT, SR:RF:CAV4:VOLT` + "\n" +
		"• SR:RF:CAV1:VOLT = "
	if !strings.HasPrefix(body, want) {
		t.Errorf("answer:\n%s\nwant it to start:\n%s", body, want)
	}
	for i := 1; i <= 4; i++ {
		if !strings.Contains(body, fmt.Sprintf("SR:RF:CAV%d:VOLT = 60", i)) || !strings.Contains(body, " kV (storage ring RF cavity") {
			t.Errorf("cavity %d voltage not in kV:\n%s", i, body)
		}
	}
}

func TestOfflineBeamCurrentTypoFindsTheDCCT(t *testing.T) {
	a, _ := offlineAgent(t)
	o := ask(t, a, "typo", "whats the beam curent")
	o.checkAnswered(t, readPlan)
	body := o.answer.Content
	for _, s := range []string{
		`• Found 1 channel for "whats the beam curent" (read "curent" as "current"): SR:DCCT:CURRENT`,
		"• SR:DCCT:CURRENT = 500.",
		" mA (stored beam current in the storage ring (DCCT))",
	} {
		if !strings.Contains(body, s) {
			t.Errorf("answer lacks %q:\n%s", s, body)
		}
	}
	if n := strings.Count(body, " = "); n != 1 {
		t.Errorf("%d values read, want only the beam current:\n%s", n, body)
	}
}

func TestOfflineSector42SaysWhichSectorsExist(t *testing.T) {
	a, _ := offlineAgent(t)
	o := ask(t, a, "s42", "What is the vacuum in sector 42?")
	o.checkAnswered(t, readPlan) // one plan: no REPLANNING, no max_planning_attempts
	want := nodes.OfflineNotice + "\n\nResults for: What is the vacuum in sector 42?\n\n" +
		`• No channel matches "What is the vacuum in sector 42?". There is no sector 42; the machine has sectors 1 to 12. ` +
		`Channels for "vacuum" (36): SR:C01:VAC:GAUGE1, SR:C01:VAC:GAUGE2, SR:C01:VAC:PUMP:CURRENT, SR:C02:VAC:GAUGE1, ` +
		`SR:C02:VAC:GAUGE2, SR:C02:VAC:PUMP:CURRENT, SR:C03:VAC:GAUGE1, SR:C03:VAC:GAUGE2 and 28 more.` + "\n" +
		"• Nothing was read, since no channel matches the request."
	if o.answer.Content != want {
		t.Errorf("answer:\n%s\nwant:\n%s", o.answer.Content, want)
	}
}

func TestOfflineKlystronTemperatureSaysThereIsNone(t *testing.T) {
	a, _ := offlineAgent(t)
	o := ask(t, a, "kly", "temperature of the klystron")
	o.checkAnswered(t, readPlan)
	want := nodes.OfflineNotice + "\n\nResults for: temperature of the klystron\n\n" +
		`• No channel matches "temperature of the klystron". No channel has "temperature" together with "klystron". ` +
		`Channels for "klystron": LINAC:KLY1:HV, LINAC:KLY1:POWER, LINAC:KLY2:HV, LINAC:KLY2:POWER, LINAC:KLY3:HV, LINAC:KLY3:POWER, LINAC:KLY4:HV, LINAC:KLY4:POWER. ` +
		`Channels for "temperature" (28): SR:C01:TEMP:AIR, SR:C01:TEMP:MAG, SR:C02:TEMP:AIR, SR:C02:TEMP:MAG, SR:C03:TEMP:AIR, SR:C03:TEMP:MAG, SR:C04:TEMP:AIR, SR:C04:TEMP:MAG and 20 more.` + "\n" +
		"• Nothing was read, since no channel matches the request."
	if o.answer.Content != want {
		t.Errorf("answer:\n%s\nwant:\n%s", o.answer.Content, want)
	}
}

// A change to something that does not exist writes nothing and asks no one
// to approve it, whether writes are enabled or not.
func TestOfflineWriteToMissingChannelWritesNothing(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprint("writes enabled ", enabled), func(t *testing.T) {
			p, _ := newPlant(t, plant.Config{Seed: 1})
			reg := capabilities.NewRegistry()
			if err := plant.Register(reg, p); err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(agent.Config{Registry: reg, Options: state.Options{WritesEnabled: enabled}})
			if err != nil {
				t.Fatal(err)
			}
			var approvals int
			var answer *state.Message
			for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "w", Input: "Set the RF cavity 7 voltage to 600 kV"}) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Type {
				case agent.EventApprovalRequired:
					approvals++
				case agent.EventMessage:
					answer = ev.Message
				}
			}
			if approvals != 0 || answer == nil || answer.Kind != state.KindAnswer {
				t.Fatalf("approvals %d, message %+v", approvals, answer)
			}
			for _, s := range []string{"There is no RF cavity 7; the machine has RF cavities 1 to 4.", "Nothing was written, since no channel matches the request."} {
				if !strings.Contains(answer.Content, s) {
					t.Errorf("answer lacks %q:\n%s", s, answer.Content)
				}
			}
			for i := 1; i <= 4; i++ {
				if v, _ := p.Setpoint(fmt.Sprintf("SR:RF:CAV%d:VOLT", i)); v == 600 {
					t.Errorf("cavity %d was set", i)
				}
			}
		})
	}
}

// Whatever an operator (or an attacker) types, Find answers with channels
// that exist or with a *NoMatch that explains itself; it never panics.
func FuzzFind(f *testing.F) {
	for _, ph := range phrasings {
		f.Add(ph.q)
	}
	for _, m := range misses {
		f.Add(m.q)
	}
	for _, s := range []string{"", " ", "???", "sector", "sector sector 3 3", "sector 99999999999999999999999", "S0", "cav0 volt",
		"q 1 q 2 q 3", "'''", "ümlaut Größe 温度", strings.Repeat("vaccum ", 500), "SR:C03", "SR:DCCT:CURRENT:EXTRA", "a b c d e f",
		"-1 sector -3", "1e400 kV", "NaN", "\x00\xff", "sector three hundred"} {
		f.Add(s)
	}
	p, err := plant.New(plant.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		res, err := p.Find(q, 0)
		if err != nil {
			var nm *plant.NoMatch
			if !errors.As(err, &nm) || len(res.Channels) != 0 || nm.Explain() == "" {
				t.Fatalf("Find(%q) = %v, %v", q, res.Channels, err)
			}
			return
		}
		if len(res.Channels) == 0 || len(res.Channels) > plant.DefaultMaxMatches {
			t.Fatalf("Find(%q) = %v", q, res.Channels)
		}
		for _, c := range res.Channels {
			if _, ok := p.Channel(c); !ok {
				t.Fatalf("Find(%q) returned unknown channel %s", q, c)
			}
		}
	})
}

// With a model, a planner that passes its own query gets the same honest
// result: one plan (the orchestrator is not asked again), and the
// responder's prompt carries what does not exist and what does. The model's
// replies are wrapped in prose and fences, as real models write them.
func TestWithModelNotFoundReachesTheResponderInOnePlan(t *testing.T) {
	p, _ := newPlant(t, plant.Config{Seed: 1})
	reg := capabilities.NewRegistry()
	if err := plant.Register(reg, p); err != nil {
		t.Fatal(err)
	}
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(`{"task": "What is the vacuum in sector 42?", "depends_on_chat_history": false}`)).
		Script(llm.RoleClassifier, llmtest.Text("Here is the selection:\n```json\n{\"capabilities\": [\"channel_finding\", \"channel_read\"]}\n```")).
		Script(llm.RoleOrchestrator, llmtest.Text("```json\n"+`{"steps": [
		 {"context_key": "s42", "capability": "channel_finding", "task_objective": "Find the vacuum gauges of sector 42", "expected_output": "CHANNEL_ADDRESSES", "parameters": {"query": "vacuum pressure sector 42"}},
		 {"context_key": "vals", "capability": "channel_read", "task_objective": "Read them", "expected_output": "CHANNEL_VALUES", "inputs": [{"CHANNEL_ADDRESSES": "s42"}]},
		 {"context_key": "answer", "capability": "respond", "task_objective": "Answer"}]}`+"\n```")).
		Script(llm.RoleResponse, llmtest.Text("Sector 42 does not exist; the storage ring has sectors 1 to 12."))
	a, err := agent.New(agent.Config{Registry: reg, Models: m.Only(llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)})
	if err != nil {
		t.Fatal(err)
	}
	o := ask(t, a, "online", "What is the vacuum in sector 42?")
	if len(o.plans) != 1 || len(o.failed) > 0 || o.answer.Kind != state.KindAnswer {
		t.Fatalf("plans %v, failed %v, message %+v", o.plans, o.failed, o.answer)
	}
	if n := len(m.CallsFor(llm.RoleOrchestrator)); n != 1 {
		t.Errorf("orchestrator called %d times", n)
	}
	calls := m.CallsFor(llm.RoleResponse)
	if len(calls) != 1 {
		t.Fatalf("responder called %d times", len(calls))
	}
	for _, s := range []string{"There is no sector 42; the machine has sectors 1 to 12.", `Channels for "vacuum pressure" (`, "Nothing was read"} {
		if !strings.Contains(calls[0].Prompt(), s) {
			t.Errorf("responder prompt lacks %q:\n%s", s, calls[0].Prompt())
		}
	}
}
