"""The coins of the tron plugin (SPEC 2.7): TRX and the pinned TRC-20 tokens."""

from __future__ import annotations

from ...api import Coin

FAMILY = "tron"

COINS: tuple[Coin, ...] = (
    Coin("TRX", "TRON", "tron", 6, 3, "5", FAMILY, default_confirmations=19,
         price_id="tron", dev_price_usd="0.12", rank=15, network_name="Tron"),
    Coin("USDT_TRC20", "Tether USD (TRC-20)", "tron", 6, 3, "1", FAMILY,
         contract="TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", default_confirmations=19,
         default_accepted=True, price_id="tether", dev_price_usd="1", rank=16,
         asset="USDT", network_name="Tron (TRC-20)"),
    Coin("USDC_TRC20", "USD Coin (TRC-20)", "tron", 6, 3, "1", FAMILY,
         contract="TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8", default_confirmations=19,
         price_id="usd-coin", dev_price_usd="1", rank=17,
         asset="USDC", network_name="Tron (TRC-20)"),
)
