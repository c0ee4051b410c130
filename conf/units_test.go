package conf

import (
	"testing"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want Size
		err  bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"100B", 100, false},
		{"1KiB", 1024, false},
		{"64MiB", 64 << 20, false},
		{"64 MiB", 64 << 20, false},
		{"2GiB", 2 << 30, false},
		{"1TiB", 1 << 40, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"1.5GiB", 0, true},
		{"10mb", 0, true},
		{"10MB", 0, true},
		{"10 kb", 0, true},
		{"10XB", 0, true},
		{"99999999999999999999", 0, true},
		{"9999999999TiB", 0, true},
		{"-1MiB", 0, true},
	}
	for _, tc := range cases {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestSizeStringParsesBack(t *testing.T) {
	for _, s := range []Size{0, 1, 1023, 1024, 1536, 64 << 20, 3 << 30, 1<<40 + 1} {
		back, err := ParseSize(s.String())
		if err != nil || back != s {
			t.Errorf("%d → %q → %d, %v", s, s.String(), back, err)
		}
	}
}
