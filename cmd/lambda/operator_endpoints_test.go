package main

import (
	"net/http"
	"testing"

	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// A Lambda URL is public and each execution environment has its own
// memory: neither /metrics nor /status is served there.
func TestLambda_ServesNoMetricsOrStatus(t *testing.T) {
	f := newFixture(t)
	api := &inProcessHTTPAPI{a: httpadapter.NewV2(inProcessFunction(t, f, "apigw-v2", nil).handler)}
	for _, path := range []string{"/metrics", "/status"} {
		req, err := http.NewRequest(http.MethodGet, path, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		res := api.Do(t, req)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on Lambda: %d, want 404", path, res.StatusCode)
		}
	}
}
