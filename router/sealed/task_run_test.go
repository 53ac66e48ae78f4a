package sealed

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestTaskRun_SealedBoundToItsTask(t *testing.T) {
	key := []byte("shared task key")
	run := &TaskRun{VHost: "demo", Backend: "fx", Name: "slow_compute", Public: "fx_slow_compute",
		Params:    json.RawMessage(`{"name":"slow_compute","arguments":{"secret":"s3cr3t"}}`),
		Principal: "alice", Claims: map[string]any{"sub": "alice"}, Token: "bearer-token-xyz"}
	blob, err := SealTaskRun(key, "owner1", "task1", run)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s3cr3t", "bearer-token-xyz", "alice", "slow_compute"} {
		if strings.Contains(string(blob), s) {
			t.Fatalf("the sealed spec shows %q", s)
		}
	}
	got, err := OpenTaskRun(key, "owner1", "task1", blob)
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != run.Token || string(got.Params) != string(run.Params) || got.Claims["sub"] != "alice" || got.Public != run.Public {
		t.Fatalf("round trip: %+v", got)
	}
	tampered := append([]byte(nil), blob...)
	tampered[len(tampered)/2] ^= 1
	other, _ := SealTaskRun([]byte("another key"), "owner1", "task1", run)
	for name, c := range map[string]struct {
		key       []byte
		owner, id string
		blob      []byte
	}{
		"tampered":      {key, "owner1", "task1", tampered},
		"another task":  {key, "owner1", "task2", blob},
		"another owner": {key, "owner2", "task1", blob},
		"another key":   {key, "owner1", "task1", other},
		"cut":           {key, "owner1", "task1", blob[:len(blob)-3]},
		"empty":         {key, "owner1", "task1", nil},
		"plain json":    {key, "owner1", "task1", []byte(`{"v":"demo","b":"fx","n":"x"}`)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := OpenTaskRun(c.key, c.owner, c.id, c.blob); !errors.Is(err, ErrBadTaskRun) {
				t.Fatalf("opened: %v", err)
			}
		})
	}
}
