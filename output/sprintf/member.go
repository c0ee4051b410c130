package sprintf

// The Elasticsearch output reads @metadata with the same raw-JSON reader the
// templates use, so that there is one reader of event bytes to fuzz and
// keep fast. These two functions are all it needs.

// Member finds the member key of the JSON object obj (the decoded key must
// equal key; the first match wins) and returns where the member's key
// starts (its opening quote) and the span [valStart, valEnd) of its value.
// It reads only as far as the member: a malformed object, or one without
// the key, gives ok = false.
func Member(obj []byte, key string) (keyStart, valStart, valEnd int, ok bool) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, 0, false
	}
	i++
	for {
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return 0, 0, 0, false
		}
		ks := i
		end, ok := skipString(obj, i)
		if !ok {
			return 0, 0, 0, false
		}
		raw := obj[i+1 : end-1]
		i = skipWS(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return 0, 0, 0, false
		}
		i = skipWS(obj, i+1)
		vs := i
		if i, ok = skipValue(obj, i); !ok {
			return 0, 0, 0, false
		}
		if keyEqual(raw, key) {
			return ks, vs, i, true
		}
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] != ',' {
			return 0, 0, 0, false
		}
		i++
	}
}

// AppendString appends the decoded content of the JSON string literal raw
// (quotes included) to dst; ok is false when raw is not a readable string.
func AppendString(dst, raw []byte) ([]byte, bool) { return appendString(dst, raw) }

// Members calls fn with the raw key (quotes and escapes included) and the
// raw value of each member of the JSON object obj, in order, until fn
// returns false or the object ends; it stops silently at malformed input.
// A key with escapes does not compare equal to its plain spelling: callers
// matching keys this way accept only the plain spelling (Beats never
// escapes its own keys).
func Members(obj []byte, fn func(key, value []byte) bool) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		end, ok := skipString(obj, i)
		if !ok {
			return
		}
		key := obj[i:end]
		i = skipWS(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipWS(obj, i+1)
		vs := i
		if i, ok = skipValue(obj, i); !ok {
			return
		}
		if !fn(key, obj[vs:i]) {
			return
		}
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}
