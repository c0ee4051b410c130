package sprintf

import (
	"strings"
	"testing"
)

func BenchmarkAppend(b *testing.B) {
	late := `{"message":"` + strings.Repeat("x", 900) + `","agent":{"type":"filebeat"},` +
		`"@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"@timestamp":"2026-12-02T10:57:41.210Z"}`
	for _, bc := range []struct {
		name, template, event string
	}{
		{"default", "%{[@metadata][beat]}-%{[@metadata][version]}", filebeatEvent},
		{"daily", "filebeat-%{+yyyy.MM.dd}", filebeatEvent},
		{"beat-version-daily", "%{[@metadata][beat]}-%{[@metadata][version]}-%{+yyyy.MM.dd}", filebeatEvent},
		{"weekly", "%{[@metadata][beat]}-%{+xxxx.ww}", filebeatEvent},
		{"java", "%{[@metadata][beat]}-%{{yyyy.MM.dd}}", filebeatEvent},
		{"deep-field", "%{[agent][version]}-%{[fields][team]}", filebeatEvent},
		{"late-metadata", "%{[@metadata][beat]}-%{[@metadata][version]}-%{+yyyy.MM.dd}", late},
		{"static", "logs-generic-default", filebeatEvent},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := MustCompile(bc.template)
			event := []byte(bc.event)
			dst := make([]byte, 0, 128)
			b.SetBytes(int64(len(event)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := f.Append(dst[:0], event, received); !ok {
					b.Fatal("render failed")
				}
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("%{[@metadata][beat]}-%{[@metadata][version]}-%{+yyyy.MM.dd}"); err != nil {
			b.Fatal(err)
		}
	}
}
