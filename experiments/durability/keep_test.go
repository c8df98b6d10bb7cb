package durability

import (
	"encoding/json"
	"testing"

	"idemlab/experiments/engine"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/faultvfs"
)

// TestFaultKeep: under --fault keep a power cut keeps every write, synced
// or not, so the model predicts what a crash of the process at the same
// point leaves; on both layers every trial ends so, the folder verifies,
// and the prediction is not drop's (with synchronous=OFF drop loses the
// commits that keep holds), so the check can tell the two apart.
func TestFaultKeep(t *testing.T) {
	for _, layer := range []string{engine.LayerVFS, engine.LayerFS} {
		t.Run(layer, func(t *testing.T) {
			if layer == engine.LayerFS {
				requireFUSE(t)
			}
			flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "DELETE", FlagSynchronous: "OFF", FlagKind: KindPower,
				FlagFault: faultvfs.FaultKeep, FlagPowerLayer: layer}
			out := scenariotest.Run(t, New(), "", flags)
			noMounts(t, "a keep run")
			if len(out.Findings) > 0 || !out.Result.Pass {
				t.Fatalf("findings %v, pass %v, differences %v", out.Findings, out.Result.Pass, differences(out.Result))
			}
			var st Settings
			if err := json.Unmarshal(out.Settings, &st); err != nil {
				t.Fatal(err)
			}
			unlikeDrop := 0
			for i, r := range out.Result.Conditions {
				c := st.Conditions[i]
				var obs map[string]Trial
				if err := json.Unmarshal(r.Observed, &obs); err != nil {
					t.Fatal(err)
				}
				for point, o := range obs {
					drop, err := WantOf(c.Pattern, c.Setting(), st.Items, point, faultvfs.FaultDrop)
					if err != nil {
						t.Fatal(err)
					}
					if drop.Outcome != o.Outcome {
						unlikeDrop++
					}
				}
			}
			if unlikeDrop == 0 {
				t.Error("every trial ended as drop predicts: the run cannot tell keep's oracle from drop's")
			}
		})
	}
}
