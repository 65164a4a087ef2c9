package weather

// DemoQuestion is a question the weather example answers, with substrings a
// correct answer contains.
type DemoQuestion struct {
	Question string
	Facts    []string
}

// Demo lists the weather example's demo questions.
var Demo = []DemoQuestion{
	{Question: "What is the weather in Paris?", Facts: []string{"Paris", "11.4 °C", "cloudy"}},
	{Question: "Is it raining in London?", Facts: []string{"London", "9.8 °C", "light rain"}},
	{Question: "How warm is it in San Francisco right now?", Facts: []string{"San Francisco", "14.9 °C", "fog"}},
}
