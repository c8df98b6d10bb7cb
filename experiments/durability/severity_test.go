package durability

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/figure"
)

func TestSeverityOf(t *testing.T) {
	tests := []struct {
		outcome string
		want    Severity
	}{
		{"", NotRun},
		{OutcomeOK, SeverityNone},
		{TagRolledBack, SeverityRedone},
		{TagRolledBack + "+" + TagLostClaim, SeverityRedone},
		{TagLostAcked, SeverityLost},
		// Committed downstream fields lost: the "./rF", which the
		// old map painted green.
		{TagRolledBack + "+" + TagLostDownstream, SeverityLost},
		{TagLostAcked + "+" + TagLostDownstream, SeverityLost},
		{TagRolledBack + "+" + TagLostClaim + "+" + TagLostDownstream + "+" + TagDuplicate, SeverityDuplicate},
		{TagDuplicate, SeverityDuplicate},
		{TagLostAcked + "+" + TagDuplicate, SeverityDuplicate},
		{TagMissing, SeverityBroken},
		{TagError, SeverityBroken},
		{TagCorrupt + "+" + TagLostAcked, SeverityBroken},
		{TagDuplicate + "+" + TagMissing, SeverityBroken},
		// A tag this table does not know is never shown as safe.
		{"lost-something-new", SeverityBroken},
	}
	for _, tt := range tests {
		if got := SeverityOf(tt.outcome); got != tt.want {
			t.Errorf("SeverityOf(%q) = %d, want %d", tt.outcome, got, tt.want)
		}
	}
	for _, tag := range tagOrder {
		if _, ok := tagSeverity[tag]; !ok {
			t.Errorf("tag %q has no severity of its own", tag)
		}
	}
}

// TestHeatOutcomes checks the heat map's styling: one colour per severity,
// different colours for different severities, a texture on every
// combination, and no two outcomes drawn alike.
func TestHeatOutcomes(t *testing.T) {
	cells := [][]string{
		{OutcomeOK, TagRolledBack, TagRolledBack + "+" + TagLostDownstream, ""},
		{TagLostAcked, TagLostAcked + "+" + TagLostDownstream, TagDuplicate, TagCorrupt + "+" + TagLostAcked},
	}
	got := heatOutcomes(cells)
	var names []string
	for _, o := range got {
		names = append(names, o.Name)
	}
	want := []string{OutcomeOK, TagRolledBack, TagRolledBack + "+" + TagLostDownstream, TagLostAcked, TagLostAcked + "+" + TagLostDownstream, TagDuplicate, TagCorrupt + "+" + TagLostAcked}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("outcomes, mildest first (-want +got):\n%s", diff)
	}
	colourOf := map[Severity]string{}
	drawn := map[string]string{}
	for _, o := range got {
		sev := SeverityOf(o.Name)
		if c, ok := colourOf[sev]; ok && c != o.Color {
			t.Errorf("%s is %s, but another outcome of its severity is %s", o.Name, o.Color, c)
		}
		colourOf[sev] = o.Color
		if combo := strings.Contains(o.Name, "+"); combo != (o.Texture != figure.Solid) {
			t.Errorf("%s: texture %d; want one exactly when the outcome combines tags", o.Name, o.Texture)
		}
		look := o.Color + "/" + string(rune('0'+o.Texture))
		if prev, ok := drawn[look]; ok {
			t.Errorf("%s and %s are drawn alike (%s)", prev, o.Name, look)
		}
		drawn[look] = o.Name
		if o.Label == "" || len(o.Label) > 4 {
			t.Errorf("%s: cell label %q; want a short code", o.Name, o.Label)
		}
	}
	seen := map[string]Severity{}
	for sev, c := range colourOf {
		if other, ok := seen[c]; ok {
			t.Errorf("severities %d and %d share the colour %s", other, sev, c)
		}
		seen[c] = sev
	}
	caption := heatCaption(got, KindPower)
	for _, w := range []string{"green: nothing lost", "orange: committed or ACKed work lost", "F committed downstream fields lost", "hatched"} {
		if !strings.Contains(caption, w) {
			t.Errorf("caption lacks %q:\n%s", w, caption)
		}
	}
	if only := heatCaption(heatOutcomes([][]string{{OutcomeOK}}), KindKill); strings.Contains(only, "orange") || strings.Contains(only, "Letters") {
		t.Errorf("caption of an all-ok map names what it does not show: %s", only)
	}
}
