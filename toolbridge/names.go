package toolbridge

import "github.com/cruciblehq/crucible/toolbridge/jsname"

// Named returns tools with the JSName of each one that has none: the name
// jsname.Tools gives it among its server's tools in the list. That list
// must be all the tools of the server that the code may call, as the
// bridge lists them: the name that tells two tools apart ("get_sum_2")
// depends on the others, so a part of the list is named right only if it
// was named whole first. A tool already named keeps its name; tools
// itself is not changed.
func Named(tools []Tool) []Tool {
	missing := false
	byServer := map[string][]string{}
	for _, t := range tools {
		missing = missing || t.JSName == ""
		byServer[t.Server] = append(byServer[t.Server], t.Name)
	}
	if !missing {
		return tools
	}
	ids := make(map[string]map[string]string, len(byServer))
	for server, names := range byServer {
		ids[server] = jsname.Tools(names)
	}
	out := make([]Tool, len(tools))
	for i, t := range tools {
		if t.JSName == "" {
			t.JSName = ids[t.Server][t.Name]
		}
		out[i] = t
	}
	return out
}
