package pattern

import (
	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	pf "idemlab/experiments/subject/patternfile"
)

// The pattern-file subject's vocabulary (subject/patternfile), as the
// scenario, explore and the records name it.
type (
	Settings       = pf.Settings
	Pattern        = pf.Pattern
	Condition      = pf.Condition
	NotRun         = pf.NotRun
	Observation    = pf.Observation
	Delivery       = pf.Delivery
	Extra          = pf.Extra
	PatternExtra   = pf.PatternExtra
	ConditionExtra = pf.ConditionExtra
	KillLanding    = pf.KillLanding
	Verdict        = pf.Verdict
	Violation      = pf.Violation
	Broken         = pf.Broken
	PowerFS        = pf.PowerFS
)

const (
	FaultNone         = pf.FaultNone
	RuleSomeSetting   = pf.RuleSomeSetting
	FlagBroker        = pf.FlagBroker
	FlagBrokerURL     = pf.FlagBrokerURL
	FlagSyncPoints    = pf.FlagSyncPoints
	PointACK          = engine.PointACK
	PointACKOpen      = engine.PointACKOpen
	InvariantACK      = pf.InvariantACK
	DBName            = pf.DBName
	KindDiscovery     = pf.KindDiscovery
	KindPoint         = pf.KindPoint
	KindHits          = pf.KindHits
	KindKill          = pf.KindKill
	KindRace          = pf.KindRace
	KindPower         = pf.KindPower
	KindSyncDiscovery = pf.KindSyncDiscovery
	LandedBeforeFirst = pf.LandedBeforeFirst
)

var (
	Run         = pf.Run
	PowerModels = engine.PowerModels
	PowerPlan   = engine.PowerPlan
	OpsSHA256   = pf.OpsSHA256
)

// Fold judges every trial by its pattern's invariants (patternfile.Fold).
func (Scenario) Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	return pf.Fold(st, rec)
}
