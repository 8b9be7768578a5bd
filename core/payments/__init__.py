"""Money in: creating and pricing payments, their status, where the payer sends, receipts and refunds."""
