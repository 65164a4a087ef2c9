package server

import "net/http"

func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, &RequestError{Kind: ErrNotFound, Message: "AG-UI not yet available"})
}
