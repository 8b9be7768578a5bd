"""Money out: payout creation and its state machine, and the worker that signs and broadcasts."""
