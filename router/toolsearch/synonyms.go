package toolsearch

// People ask for what they want in their words ("remove the file",
// "show my repos"); tools describe themselves in theirs ("delete_file",
// "list repositories"). Plain term matching misses those pairs, so a
// query's words also search for the other words of their group below, at
// a lower weight (synonymWeight): a tool that uses the query's own word
// still ranks first. The groups are the vocabulary of tools in general
// (what one does to things, and the things tools act on), not of any one
// server; a word may be in several groups.
var synonymGroups = [][]string{
	{"get", "fetch", "retrieve", "read", "show", "view", "display", "see", "look", "load", "open"},
	{"list", "enumerate", "browse", "show", "all"},
	{"search", "find", "query", "lookup", "locate", "discover", "look"},
	{"create", "make", "new", "add", "generate", "open", "start", "insert"},
	{"delete", "remove", "erase", "drop", "destroy", "trash", "rm", "purge", "uninstall"},
	{"update", "edit", "modify", "change", "set", "patch", "alter", "replace"},
	{"send", "post", "notify", "publish", "share", "message"},
	{"run", "execute", "exec", "invoke", "launch", "trigger", "start"},
	{"stop", "kill", "terminate", "cancel", "halt", "abort", "end"},
	{"move", "rename", "mv", "relocate"},
	{"copy", "duplicate", "clone"},
	{"close", "resolve", "finish", "complete", "done"},
	{"comment", "reply", "respond", "note", "annotate"},
	{"repo", "repository", "project"},
	{"pr", "pull", "merge"},
	{"mr", "merge"},
	{"issue", "ticket", "bug", "problem"},
	{"file", "document", "doc"},
	{"folder", "directory", "dir", "path"},
	{"page", "webpage", "site", "website", "url", "link", "web"},
	{"screenshot", "capture", "snapshot", "screen", "picture"},
	{"click", "press", "tap", "hit"},
	{"type", "enter", "fill", "input", "write"},
	{"navigate", "go", "visit", "browse", "goto"},
	{"database", "db", "sql", "table"},
	{"user", "member", "person", "people", "account", "profile", "who"},
	{"channel", "room", "conversation"},
	{"message", "msg", "chat", "dm", "text"},
	{"image", "picture", "photo", "img"},
	{"event", "meeting", "calendar", "schedule", "appointment"},
	{"branch", "ref"},
	{"commit", "revision", "changeset"},
	{"email", "mail", "inbox"},
	{"address", "location", "place", "geocode", "coordinates"},
	{"direction", "route", "travel", "distance"},
	{"deploy", "deployment", "release", "ship", "publish"},
	{"log", "logs", "output"},
	{"pod", "container"},
	{"error", "exception", "crash", "failure"},
	{"doc", "documentation", "docs", "reference", "manual"},
	{"memory", "remember", "knowledge", "fact", "observation"},
	{"contact", "customer", "lead", "person"},
	{"crawl", "scrape", "extract", "spider"},
	{"upload", "attach", "put"},
	{"download", "save", "export"},
	{"schema", "structure", "column", "describe"},
	{"count", "number", "many", "total"},
	{"tag", "label", "category"},
	{"assign", "assignee", "owner"},
	{"workflow", "pipeline", "build", "ci", "job"},
	{"kubernetes", "k8s", "cluster", "kubectl"},
	{"process", "pid", "proc"},
	{"terminal", "shell", "command", "cmd", "bash", "console"},
	{"wait", "sleep", "pause"},
	{"content", "contents", "text", "body"},
	{"info", "information", "details", "metadata", "about"},
	{"task", "todo", "item"},
	{"collection", "index"},
	{"key", "secret", "token"},
}

// synonyms maps a term to the other terms of its groups.
var synonyms = func() map[string][]string {
	s := stemmer{}
	out := map[string][]string{}
	for _, g := range synonymGroups {
		terms := make([]string, 0, len(g))
		for _, w := range g {
			if t := s.term(w); t != "" {
				terms = append(terms, t)
			}
		}
		for _, t := range terms {
			for _, o := range terms {
				if o != t && !contains(out[t], o) {
					out[t] = append(out[t], o)
				}
			}
		}
	}
	return out
}()

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
