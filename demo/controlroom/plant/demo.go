package plant

// DemoQuestion is a question the control-room example answers, with what a
// correct answer must contain. The end-to-end tests assert the facts.
type DemoQuestion struct {
	Question string
	// Capabilities a correct plan runs, in order (respond excluded).
	Capabilities []string
	// Facts are substrings a correct answer contains (channel names,
	// units, statistics words).
	Facts []string
	// NeedsApproval: the turn stops for a human before anything is written.
	NeedsApproval bool
	// NeedsWrites: the answer needs control_system.writes_enabled.
	NeedsWrites bool
}

// Demo lists the demo questions of the README.
var Demo = []DemoQuestion{
	{
		Question:     "What is the beam current?",
		Capabilities: []string{"channel_finding", "channel_read"},
		Facts:        []string{"SR:DCCT:CURRENT", "mA"},
	},
	{
		Question:     "Show me the RF cavity voltage over the last 2 hours",
		Capabilities: []string{"channel_finding", "archiver_retrieval"},
		Facts:        []string{"SR:RF:CAV1:VOLT", "SR:RF:CAV4:VOLT", "kV", "min", "max", "mean"},
	},
	{
		Question:     "What is the vacuum pressure in sector 3?",
		Capabilities: []string{"channel_finding", "channel_read"},
		Facts:        []string{"SR:C03:VAC:GAUGE1", "SR:C03:VAC:GAUGE2", "Torr"},
	},
	{
		Question:      "Set the quadrupole Q1 current in the BTS line to 105 A",
		Capabilities:  []string{"channel_finding", "channel_write"},
		Facts:         []string{"BTS:MAG:Q1:CURRENT", "105.00 A"},
		NeedsApproval: true,
		NeedsWrites:   true,
	},
}
