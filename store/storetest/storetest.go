// Package storetest is the store contract as a suite: what every
// store.Store backend must do, whatever holds the data. The memory store,
// Redis and Redis Cluster all run it (store's TestContract); a new backend
// runs it the same way:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return newMyStore(t) })
//	}
//
// Backend-specific assertions (Redis keys and TTLs, one hash slot per
// session on a cluster) stay with the backend's own tests.
package storetest

import (
	"testing"

	"github.com/mcpgw/gateway/store"
)

// Run runs every contract test as a subtest of t, each on a fresh store
// from newStore, which starts empty and is closed by newStore's cleanup
// (t.Cleanup). Tests do not run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore(t)) })
	}
}

// contract is every test of the suite, by name.
var contract = []struct {
	name string
	test func(t *testing.T, s store.Store)
}{
	{"Store_PrincipalBackendSessionSwapsOnlyFromTheOneKept", storePrincipalBackendSessionSwapsOnlyFromTheOneKept},
	{"Store_ReleasedBackendSessionsAreThoseNoOwnerKeeps", storeReleasedBackendSessionsAreThoseNoOwnerKeeps},
	{"Bus_SubscriberGetsItsOwnCopy", busSubscriberGetsItsOwnCopy},
	{"EventLog_LatestEventIDIsTheResumePoint", eventLogLatestEventIDIsTheResumePoint},
	{"EventLog_TagsEachStreamsEvents", eventLogTagsEachStreamsEvents},
	{"EventLog_CallStreamRefusesWhatWasNeverIssued", eventLogCallStreamRefusesWhatWasNeverIssued},
	{"Leases_CallStreamLostWhenTheLeaseLapses", leasesCallStreamLostWhenTheLeaseLapses},
	{"Marks_CancelMarkSeenOnLoadAndBroadcast", marksCancelMarkSeenOnLoadAndBroadcast},
	{"Marks_PendingRoundTrip", marksPendingRoundTrip},
	{"Marks_AnswerStoredAndBroadcastOnlyWhilePending", marksAnswerStoredAndBroadcastOnlyWhilePending},
	{"OAuthRecords_Contract", oAuthRecordsContract},
	{"RateLimits_RefillAfterTheEmissionInterval", rateLimitsRefillAfterTheEmissionInterval},
	{"RateLimits_AllOrNothing", rateLimitsAllOrNothing},
	{"RateLimits_CountTakesABatchAllOrNothing", rateLimitsCountTakesABatchAllOrNothing},
	{"RateLimits_RefuseBadChecks", rateLimitsRefuseBadChecks},
	{"Sessions_CreateThenLoadRoundTrips", sessionsCreateThenLoadRoundTrips},
	{"Sessions_CallersCannotAliasStoredData", sessionsCallersCannotAliasStoredData},
	{"Sessions_PutBackendsReplacesOnlyTheGivenBackends", sessionsPutBackendsReplacesOnlyTheGivenBackends},
	{"Sessions_SetLogLevelKeepsTheRestOfTheSession", sessionsSetLogLevelKeepsTheRestOfTheSession},
	{"Sessions_SubscriptionsRoundTrip", sessionsSubscriptionsRoundTrip},
	{"Sessions_SubscriptionsBoundedPerSession", sessionsSubscriptionsBoundedPerSession},
	{"Sessions_ClientMetadataBounded", sessionsClientMetadataBounded},
	{"Sessions_CreateRejectsTTLBelowOneMillisecond", sessionsCreateRejectsTTLBelowOneMillisecond},
	{"Store_PingAndCloseTwice", storePingAndCloseTwice},
	{"Tasks_CompareAndSetLetsOneInstanceSettle", tasksCompareAndSetLetsOneInstanceSettle},
	{"Tasks_ALapsedLeaseIsSeenAndFreesItsPlace", tasksALapsedLeaseIsSeenAndFreesItsPlace},
	{"Tasks_AnswersAreHeldUntilTheRoundIsComplete", tasksAnswersAreHeldUntilTheRoundIsComplete},
	{"Tasks_CancelIsMarkedAndAnnounced", tasksCancelIsMarkedAndAnnounced},
	{"Tasks_RefusesBadInput", tasksRefusesBadInput},
	{"Tasks_APlaceholderLeaseIsTakenOverOnce", tasksAPlaceholderLeaseIsTakenOverOnce},
	{"UserTokens_PutGetListDeletePerOwner", userTokensPutGetListDeletePerOwner},
	{"UserTokens_UseOnceIsFirstOnceAcrossConcurrentCallers", userTokensUseOnceIsFirstOnceAcrossConcurrentCallers},
	{"UserTokens_LockHasOneHolderAndLapses", userTokensLockHasOneHolderAndLapses},
	{"UserTokens_RefusesBadInput", userTokensRefusesBadInput},
}
