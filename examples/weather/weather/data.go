package weather

import (
	"slices"
	"strings"
)

// Weather is one observation (the WEATHER_DATA context value).
type Weather struct {
	City         string  `json:"city"`
	TemperatureC float64 `json:"temperature_c"`
	HumidityPct  int     `json:"humidity_pct"`
	WindKPH      float64 `json:"wind_kph"`
	Conditions   string  `json:"conditions"`
	ObservedAt   string  `json:"observed_at"` // RFC 3339
}

// Summary is the one-line description the responder shows.
func (w Weather) Summary() string {
	return "Weather in " + w.City + ": " + formatTemp(w.TemperatureC) + ", " + w.Conditions +
		", humidity " + itoa(w.HumidityPct) + "%, wind " + formatFloat(w.WindKPH) + " km/h (observed " + w.ObservedAt + ")"
}

// cities is the service's fixed data: the same city always has the same
// weather, so tests and demo answers can be asserted.
var cities = []Weather{
	{City: "Berlin", TemperatureC: 6.5, HumidityPct: 78, WindKPH: 14, Conditions: "overcast"},
	{City: "Chicago", TemperatureC: 2.1, HumidityPct: 65, WindKPH: 27, Conditions: "windy"},
	{City: "Geneva", TemperatureC: 8.3, HumidityPct: 70, WindKPH: 9, Conditions: "partly cloudy"},
	{City: "Hamburg", TemperatureC: 7.0, HumidityPct: 85, WindKPH: 22, Conditions: "drizzle"},
	{City: "London", TemperatureC: 9.8, HumidityPct: 82, WindKPH: 18, Conditions: "light rain"},
	{City: "Menlo Park", TemperatureC: 16.4, HumidityPct: 55, WindKPH: 8, Conditions: "sunny"},
	{City: "New York", TemperatureC: 5.2, HumidityPct: 60, WindKPH: 20, Conditions: "clear"},
	{City: "Paris", TemperatureC: 11.4, HumidityPct: 76, WindKPH: 12, Conditions: "cloudy"},
	{City: "San Francisco", TemperatureC: 14.9, HumidityPct: 72, WindKPH: 16, Conditions: "fog"},
	{City: "Sydney", TemperatureC: 24.6, HumidityPct: 58, WindKPH: 19, Conditions: "sunny"},
	{City: "Tokyo", TemperatureC: 13.7, HumidityPct: 63, WindKPH: 11, Conditions: "clear"},
	{City: "Upton", TemperatureC: 4.8, HumidityPct: 68, WindKPH: 15, Conditions: "clear"},
}

// Cities lists the cities the service knows, sorted.
func Cities() []string {
	out := make([]string, len(cities))
	for i, c := range cities {
		out[i] = c.City
	}
	return out
}

func lookup(city string) (Weather, bool) {
	i := slices.IndexFunc(cities, func(w Weather) bool { return strings.EqualFold(w.City, strings.TrimSpace(city)) })
	if i < 0 {
		return Weather{}, false
	}
	return cities[i], true
}
