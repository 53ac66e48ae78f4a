package config

import (
	"bytes"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// yamlLineRE splits the "yaml: line N: problem" form of a YAML syntax error.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// maxLineSearch bounds the prefix search of syntaxError: past it, the
// line the YAML library gave is reported as it is.
const maxLineSearch = 5000

// syntaxError turns a YAML syntax error into an Error whose Line is where
// the mistake is. The YAML library reports the line where the construct
// around the problem begins, and for parser errors that line minus one: a
// tab or a bad indent in line 9 of a backend is reported at the line of
// its "backends:", or of the one before. The mistake is the first line
// from there at which the document, cut after it, fails with the same
// problem; a file whose mistake cannot be found that way keeps the
// library's line.
func syntaxError(source string, data []byte, err error) *Error {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Source: source, Msg: yamlMsg(err)}
	}
	reported, _ := strconv.Atoi(m[1])
	problem := m[2]
	line := reported
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) <= maxLineSearch {
		for end := max(reported, 1); end <= len(lines); end++ {
			var n yaml.Node
			perr := yaml.Unmarshal(bytes.Join(lines[:end], nil), &n)
			if pm := yamlLineRE.FindStringSubmatch(errString(perr)); pm != nil && pm[2] == problem {
				line = end
				break
			}
		}
	}
	return &Error{Source: source, Line: line, Msg: "invalid YAML: " + oneLine(problem)}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
