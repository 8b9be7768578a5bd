"""Schema of the bitcoin plugin (namespace ``bitcoin``): the hot wallet's bookkeeping."""
