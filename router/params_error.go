package router

import (
	"encoding/json"
	"errors"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// paramsError turns a failure to decode a request's params into -32602
// that says which member is wrong and what was expected, in JSON terms
// ("tools/list: params.cursor must be a string"), never encoding/json's
// own text, which spells out Go types ("cannot unmarshal number into Go
// struct field .cursor of type string").
func paramsError(method string, err error) *jsonrpc.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" && len(te.Field) <= 64 {
		return invalidParams("%s: params.%s must be %s", method, te.Field, jsonKind(te.Type))
	}
	return invalidParams("%s: params must be an object", method)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}
