package server

import (
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofWriteTimeout replaces the admin endpoint's write timeout while
// pprof is on: a CPU profile or execution trace answers only after the
// seconds it was asked for (30 by default), and net/http/pprof refuses a
// duration longer than the server's write timeout.
const pprofWriteTimeout = 2 * time.Minute

// mountPprof serves net/http/pprof's handlers under /debug/pprof/ on mux
// (admin.pprof = true). They are mounted here rather than through the
// package's init, which registers them on http.DefaultServeMux.
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
