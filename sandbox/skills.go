package sandbox

import "github.com/cruciblehq/crucible/jail"

// skillsDir is where the code sees the operator's skills, read-only, and
// imports them from (the engine's SkillsDir).
const skillsDir = "/skills"

// skillsLayers are the jail's layers for the operator's skills, and for a
// caller's saved skills laid over them: its files hide the operator's of
// the same name, and no other caller's code sees them.
func skillsLayers(skills, saved string) (layers, over []jail.Layer) {
	if skills != "" {
		layers = []jail.Layer{{Dir: skills, Path: skillsDir, What: "the skills directory"}}
	}
	if saved != "" {
		over = []jail.Layer{{Dir: saved, Path: skillsDir, What: "the saved skills"}}
	}
	return layers, over
}

// lateSkills is a client's saved skills, laid over the operator's when a
// pooled jail's work arrives (jail.Jail.Bind).
func lateSkills(saved string) []jail.Layer {
	if saved == "" {
		return nil
	}
	return []jail.Layer{{Dir: saved, Path: skillsDir, What: "the client's saved skills"}}
}
