package sandbox

import "github.com/cruciblehq/crucible/violation"

// violations counts an execution's refusals, one entry per distinct
// refusal: the reasons name what the code asked for, so past
// maxNetViolations of them one entry per kind counts the rest. Its owner
// locks it.
type violations struct {
	list  []violation.Violation
	index map[violation.Violation]int
}

func (vs *violations) add(v violation.Violation) {
	if vs.index == nil {
		vs.index = map[violation.Violation]int{}
	}
	if _, ok := vs.index[v]; !ok && len(vs.list) >= maxNetViolations {
		v = violation.Violation{Kind: v.Kind, Reason: unlisted}
	}
	if i, ok := vs.index[v]; ok {
		vs.list[i].Count++
		return
	}
	vs.index[v] = len(vs.list)
	v.Count = 1
	vs.list = append(vs.list, v)
}
