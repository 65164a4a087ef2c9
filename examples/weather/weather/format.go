package weather

import "strconv"

func itoa(i int) string { return strconv.Itoa(i) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func formatTemp(c float64) string { return strconv.FormatFloat(c, 'f', 1, 64) + " °C" }
