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
	eachMember(obj, skipWS(obj, 0), func(ks, ke, vs, ve int) bool {
		if keyEqual(obj[ks+1:ke-1], key) {
			keyStart, valStart, valEnd, ok = ks, vs, ve, true
			return false
		}
		return true
	})
	return keyStart, valStart, valEnd, ok
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
	eachMember(obj, skipWS(obj, 0), func(ks, ke, vs, ve int) bool {
		return fn(obj[ks:ke], obj[vs:ve])
	})
}
