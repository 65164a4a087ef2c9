package nodes

// The reply shapes the nodes show a model, for the external tests that
// check a model is shown them again after an unusable reply.
const (
	TaskShape     = taskShape
	SelectedShape = selectedShape
	MatchShape    = matchShape
)
