// The domain core: customer sessions, payment contexts, source polls and redirect sessions as
// pure state machines. It does no I/O: a clock, a store and the Stripe API are injected through
// protocols declared here, so its tests run with no sockets and no sleeps. Filled in by the
// issues that build those objects.
