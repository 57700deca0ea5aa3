package cli

import (
	"testing"

	"github.com/cruciblehq/crucible/config"
)

// serve warns when writable skills are shared by several clients: the
// anonymous tokens, and the named clients whose profile has no skills of
// its own.
func TestSharingSkills(t *testing.T) {
	cfg := config.Default()
	cfg.Serve.Skills, cfg.Serve.SkillsWritable = "/srv/skills", true
	cfg.Profiles = map[string]config.Profile{"own": {Skills: config.ProfileSkills{Dir: "/srv/own", Writable: true}}, "plain": {}}
	cfg.Clients = map[string]config.Client{"a": {Profile: "own"}, "b": {Profile: "plain"}, "c": {}}
	if n := sharingSkills(cfg, 1); n != 3 {
		t.Errorf("sharing: %d, want 3 (one anonymous token, b and c)", n)
	}
	cfg.Serve.SkillsWritable = false
	if n := sharingSkills(cfg, 1); n != 0 {
		t.Errorf("read-only skills: %d sharing", n)
	}
}
