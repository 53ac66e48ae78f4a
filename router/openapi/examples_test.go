package openapi

import (
	"encoding/json"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// Real descriptions from npm, unmodified: ReadMe's examples (the
// Petstore in Swagger 2.0, OpenAPI 3.0 and 3.1, and circular schemas)
// and GitHub's REST description.

func TestExamples_ThePetstoreInEveryVersionGivesTheSameTools(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	creds := Credentials{Bearer: true, Headers: []string{"api_key"}}
	var first []string
	for _, v := range []string{"2.0", "3.0", "3.1"} {
		a := load(t, npmFixture(t, "@readme/oas-examples/"+v+"/json/petstore.json"), Options{Credentials: creds})
		names := a.Names()
		if len(names) < 19 || !slices.Contains(names, "findPetsByStatus") || !slices.Contains(names, "getPetById") {
			t.Fatalf("%s: tools %v", v, names)
		}
		if first == nil {
			first = names
		} else if !slices.Equal(first, names) {
			t.Errorf("%s: tools %v, 2.0 gave %v", v, names, first)
		}
		var def struct {
			InputSchema struct {
				Properties map[string]map[string]any
				Required   []string
			} `json:"inputSchema"`
		}
		_ = json.Unmarshal(a.Tool("findPetsByStatus").Def(), &def)
		if def.InputSchema.Properties["status"]["type"] != "array" || !slices.Contains(def.InputSchema.Required, "status") {
			t.Errorf("%s: findPetsByStatus input %v", v, def.InputSchema)
		}
		for _, name := range names {
			if err := a.Tool(name).Validate(map[string]any{}); err != nil && strings.Contains(err.Error(), "cannot be used") {
				t.Errorf("%s: %s: %v", v, name, err)
			}
		}
	}
}

func TestExamples_CircularSchemasAreReferencesToThemselves(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	for _, f := range []string{"3.0/json/schema-circular.json", "3.0/json/circular.json", "3.1/json/petstore.json", "2.0/json/schema-circular.json"} {
		a := load(t, npmFixture(t, "@readme/oas-examples/"+f), Options{BaseURL: "https://api.example.test", Credentials: Credentials{Bearer: true, Headers: []string{"api_key"}}})
		for _, name := range a.Names() {
			tool := a.Tool(name)
			if err := tool.Validate(map[string]any{}); err != nil && strings.Contains(err.Error(), "cannot be used") {
				t.Errorf("%s: %s: %v", f, name, err)
			}
		}
	}
	a := load(t, npmFixture(t, "@readme/oas-examples/3.0/json/schema-circular.json"), Options{BaseURL: "https://api.example.test"})
	found := false
	for _, name := range a.Names() {
		if strings.Contains(string(a.Tool(name).Def()), `"$ref":"#/$defs/`) {
			found = true
		}
	}
	if !found {
		t.Error("no tool of schema-circular.json refers to a $defs entry")
	}
}

func TestExamples_GitHubsDescriptionBecomesAToolPerOperation(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	if testing.Short() {
		t.Skip("loads a 13 MB description")
	}
	// Loading it builds a heap of hundreds of MB, mostly kept: collecting
	// at every doubling is most of the test's CPU under -race (31 CPU-s
	// against 23 with GOGC=400, measured).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	a := load(t, npmFixture(t, "@octokit/openapi/generated/api.github.com.json"), Options{})
	if a.Len() < 1000 || a.Tool("repos_get") == nil || a.Tool("issues_list-for-repo") == nil {
		t.Fatalf("%d tools", a.Len())
	}
	var pages, tools int
	for cursor := ""; ; pages++ {
		p, err := a.ListPage(cursor)
		if err != nil {
			t.Fatal(err)
		}
		tools += len(p.Tools)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if tools != a.Len() || pages != (a.Len()-1)/listPageTools {
		t.Errorf("%d tools in %d pages, want %d", tools, pages+1, a.Len())
	}
	if _, err := a.ListPage("tools@99999"); err == nil {
		t.Error("a cursor past the end was taken")
	}
}
