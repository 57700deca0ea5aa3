package jail

// Hook is where main and TestMain once entered the jail's child processes,
// and it stays their first call. The children no longer get this far: they
// run from the init of package jail/internal/child, before the binary's
// other packages initialize, so that none of them pays for an engine or a
// network stack it never uses.
func Hook() {}
