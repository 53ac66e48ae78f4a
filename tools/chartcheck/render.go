// Package chartcheck checks the Helm chart charts/mcpgw: helm lint
// --strict and helm template of each values example (helm.sh/helm/v4,
// pinned in this module), every rendered object decoded strictly into its
// Kubernetes API type (k8s.io/api, and the prometheus-operator and Gateway
// API types for ServiceMonitor and HTTPRoute), so an unknown or misspelt
// field fails, and what the chart promises checked on the typed objects.
// It lives in the tools module so the gateway's own module does not
// depend on Kubernetes.
package chartcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// decoder decodes strictly: unknown fields and duplicate fields are
// errors, as `kubectl apply --validate=strict` makes them.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, monitoringv1.AddToScheme, gatewayv1.Install} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// Decode splits a rendered manifest stream into documents and decodes each
// strictly into its typed object. An object of a kind no registered API
// knows is an error too.
func Decode(manifests []byte) ([]runtime.Object, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	var out []runtime.Object
	for n := 1; ; n++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", n, firstLines(doc), err)
		}
		if gvk.Kind == "" {
			return nil, fmt.Errorf("document %d has no kind", n)
		}
		out = append(out, obj)
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// firstLines names a document in an error: its Source comment and kind.
func firstLines(doc []byte) string {
	var parts []string
	for _, l := range bytes.Split(doc, []byte("\n")) {
		t := string(bytes.TrimSpace(l))
		if len(t) > 9 && (t[:9] == "# Source:" || t[:5] == "kind:") {
			parts = append(parts, t)
		}
		if len(parts) == 2 {
			break
		}
	}
	return fmt.Sprint(parts)
}
