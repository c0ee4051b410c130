package drain

// Unset collects, in the order checked, the names of an output's options
// that are unset or out of range, for one error naming them all. It holds
// names only, so that the error shows no value, hence no credential.
type Unset []string

// Check adds name unless ok.
func (u *Unset) Check(name string, ok bool) {
	if !ok {
		*u = append(*u, name)
	}
}
