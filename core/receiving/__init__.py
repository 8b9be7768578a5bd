"""What a payer is asked to pay and where: invoices plugins mint, a merchant's deposit addresses."""
