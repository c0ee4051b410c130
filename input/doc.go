// Package input holds logpond's inputs. The Beats input speaks Lumberjack v2
// to Beats' output.logstash and acknowledges a batch only after the journal
// has made every record of it durable (design.md §6). Its reader enforces
// window, frame, event and decompression limits before allocating.
package input
