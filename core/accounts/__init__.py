"""Who may do what: merchants, credentials, API keys, sessions, lockouts and security events."""
