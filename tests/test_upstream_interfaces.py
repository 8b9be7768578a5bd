"""Interfaces transcribed by hand stay what upstream defines (issue 35, item 6).

* ``tests/tron_protos/tron_subset.proto`` (the test node decodes our
  protobuf with it) against Tron's field tables kept in
  ``tests/upstream/tron_protocol.json`` (tronprotocol/protocol at pinned
  commits): every field's name, number, type and label, every enum value,
  and no upstream field missing but the one left out on purpose.
* The LND stand-in (``tests/lnd_standin.py``) against LND's swagger
  definitions in ``tests/upstream/lnd_rest.json``: its request tables are
  read from there (so it accepts what LND accepts, typed as LND types it),
  and every answer it gives carries only upstream fields, typed as proto3
  JSON types them (64-bit integers as strings, bytes as base64, enums by name).

Breaks caught (tried): a field of the subset renumbered (TransferContract
amount = 4); a stand-in answer with a field LND does not have, or an int64
sent as a JSON number.
"""

from __future__ import annotations

import base64
import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from google.protobuf.descriptor import FieldDescriptor

from .lnd_standin import INVOICE_FIELDS, SEND_PAYMENT_FIELDS, UPSTREAM, Invoice, LndStandIn, Payment, parse_body, \
    proto_json_kind

TRON = json.loads((Path(__file__).resolve().parent / "upstream" / "tron_protocol.json").read_text(encoding="utf-8"))
SCALARS = {FieldDescriptor.TYPE_BYTES: "bytes", FieldDescriptor.TYPE_INT64: "int64",
           FieldDescriptor.TYPE_INT32: "int32", FieldDescriptor.TYPE_STRING: "string",
           FieldDescriptor.TYPE_BOOL: "bool", FieldDescriptor.TYPE_UINT64: "uint64"}


def _descriptors(module: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every message and enum of the compiled subset, by full name."""
    messages, enums = {}, {}

    def visit(message: Any) -> None:
        messages[message.full_name] = message
        for enum in message.enum_types:
            enums[enum.full_name] = enum
        for nested in message.nested_types:
            visit(nested)

    for message in module.DESCRIPTOR.message_types_by_name.values():
        visit(message)
    for enum in module.DESCRIPTOR.enum_types_by_name.values():
        enums[enum.full_name] = enum
    return messages, enums


def _field_table(message: Any) -> dict[str, list[Any]]:
    table = {}
    for field in message.fields:
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            kind = field.message_type.full_name
        elif field.type == FieldDescriptor.TYPE_ENUM:
            kind = field.enum_type.full_name
        else:
            kind = SCALARS[field.type]
        label = "repeated" if field.is_repeated else "singular"
        table[field.name] = [field.number, kind, label]
    return table


def test_the_tron_subset_declares_exactly_upstreams_fields(tron_protos):
    messages, enums = _descriptors(tron_protos)
    assert set(messages) == set(TRON["messages"]), "the subset's messages differ from the upstream table's"
    for name, upstream in TRON["messages"].items():
        ours = _field_table(messages[name])
        expected = {field: spec for field, spec in upstream["fields"].items()
                    if field not in TRON["left_out"].get(name, [])}
        assert ours == expected, f"{name}: subset {ours} != upstream ({upstream['from']}) {expected}"
    for name, upstream in TRON["enums"].items():
        assert {v.name: v.number for v in enums[name].values} == upstream["values"], name


def test_the_stand_ins_request_tables_are_read_from_lnds_definitions():
    for table, definition in ((INVOICE_FIELDS, "lnrpcInvoice"), (SEND_PAYMENT_FIELDS, "routerrpcSendPaymentRequest")):
        properties = UPSTREAM["definitions"][definition]["properties"]
        assert table == {name: proto_json_kind(schema) for name, schema in properties.items()} and table
    assert SEND_PAYMENT_FIELDS["fee_limit_sat"] == "int64" and SEND_PAYMENT_FIELDS["timeout_seconds"] == "int32"
    assert INVOICE_FIELDS["r_hash"] == "bytes" and INVOICE_FIELDS["cltv_expiry"] == "uint64"
    with pytest.raises(ValueError, match="unknown field"):
        parse_body(b'{"value_msats": "1"}', INVOICE_FIELDS)  # one letter off: LND refuses it
    with pytest.raises(ValueError, match="int64"):
        parse_body(b'{"fee_limit_sat": true}', SEND_PAYMENT_FIELDS)


def _problems(answer: dict[str, Any], definition: str) -> list[str]:
    """Fields of ``answer`` that the upstream definition lacks or types otherwise."""
    properties = UPSTREAM["definitions"][definition]["properties"]
    problems = [f"{name}: not in {definition}" for name in answer if name not in properties]
    for name, value in answer.items():
        schema = properties.get(name)
        if schema is None:
            continue
        kind = proto_json_kind(schema)
        ref = schema.get("$ref", "").rsplit("/", 1)[-1]
        if kind in ("int64", "uint64"):
            ok = isinstance(value, str) and value.lstrip("-").isdigit()
        elif kind == "bytes":
            ok = isinstance(value, str) and len(base64.b64decode(value + "=" * (-len(value) % 4))) >= 0
        elif kind == "string":
            ok = isinstance(value, str)
        elif kind == "bool":
            ok = isinstance(value, bool)
        elif kind == "array":
            ok = isinstance(value, list)
        elif ref in UPSTREAM["definitions"] and "enum" in UPSTREAM["definitions"][ref]:
            ok = value in UPSTREAM["definitions"][ref]["enum"]
        elif ref:
            ok = isinstance(value, str)  # an enum whose values are not kept here: by name
        else:
            ok = isinstance(value, dict)
        if not ok:
            problems.append(f"{name}: {value!r} is not a proto3 JSON {kind or ref}")
    return problems


def test_the_stand_ins_invoice_and_payment_objects_are_lnds():
    invoice = Invoice(b"h" * 32, b"p" * 32, "lnbcrt1...", 10_000_000, "memo", 1_700_000_000, 3600, 1, b"a" * 32,
                      state="SETTLED", settle_date=1_700_000_100, settle_index=1, amt_paid_msat=10_000_000)
    assert _problems(invoice.json(), "lnrpcInvoice") == []
    for status, reason in (("IN_FLIGHT", "FAILURE_REASON_NONE"), ("FAILED", "FAILURE_REASON_NO_ROUTE")):
        payment = Payment("ab" * 32, 2_000_000, "lnbcrt1...", status=status, failure_reason=reason)
        assert _problems(payment.json(), "lnrpcPayment") == []


async def test_the_stand_ins_http_answers_are_lnds(tmp_path):
    node = LndStandIn()
    await node.start(tmp_path)
    context = ssl.create_default_context(cafile=node.cert_path)
    headers = {"Grpc-Metadata-macaroon": node.macaroon.hex()}
    try:
        async with aiohttp.ClientSession(headers=headers) as session:
            async with session.post(f"{node.url}/v1/invoices", json={"value_msat": "10000000", "memo": "m"},
                                    ssl=context) as response:
                added = await response.json()
            assert response.status == 200 and _problems(added, "lnrpcAddInvoiceResponse") == []
            async with session.get(f"{node.url}/v1/payreq/{added['payment_request']}", ssl=context) as response:
                decoded = await response.json()
            assert response.status == 200 and _problems(decoded, "lnrpcPayReq") == []
            r_hash = base64.b64decode(added["r_hash"]).hex()
            async with session.get(f"{node.url}/v1/invoice/{r_hash}", ssl=context) as response:
                looked_up = await response.json()
            assert response.status == 200 and _problems(looked_up, "lnrpcInvoice") == []
            async with session.get(f"{node.url}/v1/getinfo", ssl=context) as response:
                info = await response.json()
            assert response.status == 200 and _problems(info, "lnrpcGetInfoResponse") == []
            assert [_problems(chain, "lnrpcChain") for chain in info["chains"]] == [[]]
    finally:
        await node.close()
