"""The contract's error codes by name for the end-to-end tests, taken from the client package's
exception classes, which are generated from proto/stpd.openrpc.json (NOT_FOUND is
`stpd.errors.NotFound.code`). test_codes.py holds both to the contract. New tests may as well
catch the classes themselves: `pytest.raises(stpd.errors.NotFound)`."""

from stpd import errors

INVALID_PARAMS = errors.InvalidParams.code
NOT_FOUND = errors.NotFound.code
PERMISSION_DENIED = errors.PermissionDenied.code
INVALID_STATE = errors.InvalidState.code
DISABLED = errors.Disabled.code
BACKEND_ERROR = errors.BackendError.code
APP_REQUEST_FAILED = errors.AppRequestFailed.code
APP_REQUEST_TIMED_OUT = errors.AppRequestTimedOut.code
APP_ANSWER_INVALID = errors.AppAnswerInvalid.code
CURSOR_EXPIRED = errors.CursorExpired.code
SUBSCRIPTION_NOT_FOUND = errors.SubscriptionNotFound.code
CURSOR_AHEAD = errors.CursorAhead.code
TOO_MANY_WAITS = errors.TooManyWaits.code
STRIPE_CARD_ERROR = errors.StripeCardError.code
STRIPE_INVALID_REQUEST = errors.StripeInvalidRequest.code
STRIPE_CONNECTION = errors.StripeConnection.code
REDIRECT_UNAVAILABLE = errors.RedirectUnavailable.code
REDIRECT_OPEN_FAILED = errors.RedirectOpenFailed.code
REDIRECT_CANCELLED = errors.RedirectCancelled.code
REDIRECT_LOAD_FAILED = errors.RedirectLoadFailed.code
PENDING_ACTION_GONE = errors.PendingActionGone.code
PENDING_ACTION_TIMED_OUT = errors.PendingActionTimedOut.code
PAYMENT_FAILED = errors.PaymentFailed.code
SHIPPING_ADDRESS_INCOMPLETE = errors.ShippingAddressIncomplete.code
CARD_INVALID = errors.CardInvalid.code
NEXT_ACTION_UNSUPPORTED = errors.NextActionUnsupported.code
RETURN_URL_REQUIRED = errors.ReturnURLRequired.code
INTENT_POLL_TIMED_OUT = errors.IntentPollTimedOut.code
