"""`lomi catalog` is the contract: the live server's tools/list must say exactly what its `tools`
say, both on the wire (raw JSON-RPC) and as a third-party SDK parses it; its `outputSchemas` hold
each tool's complete output schema, of which the listed one is the slim part."""

import json
import subprocess

import pytest

from conftest import LOMI_BIN, dump
from rawhttp import RawSession

pytestmark = pytest.mark.anyio

FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def catalog() -> dict:
    done = subprocess.run([LOMI_BIN, "catalog"], capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["controlApiVersion"] == "1.0"
    return printed


def by_name(tools: list[dict]) -> dict[str, dict]:
    named = {tool["name"]: tool for tool in tools}
    assert len(named) == len(tools), "duplicate tool names"
    return named


def test_catalog_equals_tools_list_on_the_wire(lomi):
    expected = catalog()["tools"]
    # An approved pairing with every family (an unapproved client is listed no tools).
    session = RawSession(lomi.port, headers=lomi.bearer())
    listed = session.request("tools/list")
    assert "nextCursor" not in listed, "one page holds every tool"
    # Byte-for-byte the same JSON values, in the same order.
    assert [t["name"] for t in listed["tools"]] == [t["name"] for t in expected]
    live = by_name(listed["tools"])
    for name, tool in by_name(expected).items():
        assert live[name] == tool, f"{name} differs:\ncatalog:\n{dump(tool)}\nlive:\n{dump(live[name])}"
    for tool in expected:
        assert set(FIELDS) <= set(tool), f"{tool['name']} lacks {set(FIELDS) - set(tool)}"
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"].get("additionalProperties") is False, tool["name"]


async def test_catalog_equals_tools_list_through_the_sdk(lomi, mcp):
    expected = by_name(catalog()["tools"])
    token = lomi.create_token(name="catalog")["token"]
    async with mcp.session(token=token) as agent:
        listed = await agent.session.list_tools()
    assert listed.next_cursor is None
    live = by_name([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools])
    assert sorted(live) == sorted(expected)
    for name, tool in expected.items():
        # The SDK may add fields of its own (with defaults); compare the catalog's fields.
        seen = {field: live[name].get(field) for field in tool}
        assert seen == tool, f"{name} differs:\ncatalog:\n{dump(tool)}\nSDK:\n{dump(live[name])}"


def test_every_tool_declares_the_envelope_output_schema():
    printed = catalog()
    assert sorted(printed["outputSchemas"]) == sorted(t["name"] for t in printed["tools"])
    for tool in printed["tools"]:
        schema = printed["outputSchemas"][tool["name"]]
        assert schema["type"] == "object" and schema["additionalProperties"] is False, dump(schema)
        properties = schema["properties"]
        assert properties["status"] == {"enum": ["ok", "error"]}, dump(schema)
        assert properties["controlApiVersion"] == {"const": "1.0"}, dump(schema)
        assert {"data", "code", "message", "details"} <= set(properties), dump(schema)
        branches = {b["properties"]["status"]["const"]: b["required"] for b in schema["oneOf"]}
        assert branches == {"ok": ["data"], "error": ["code", "message"]}, f"{tool['name']}: {dump(schema)}"
        # The listed schema is the slim envelope: open, so an error reply fits it too.
        listed = tool["outputSchema"]
        assert listed["type"] == "object" and "additionalProperties" not in listed, dump(listed)
        assert listed["required"] == ["status", "controlApiVersion"], dump(listed)
        assert listed["properties"]["status"] == properties["status"], dump(listed)
        assert listed["properties"]["controlApiVersion"] == properties["controlApiVersion"], dump(listed)
        complete_data = properties["data"]
        if "result" in complete_data.get("properties", {}) and "anyOf" in complete_data["properties"]["result"]:
            # A mutation: the listed result has the confirmed result's fields, and nothing required.
            confirmed = complete_data["properties"]["result"]["anyOf"][0]
            result = listed["properties"]["data"]["properties"]["result"]
            assert result == {"properties": confirmed.get("properties", {})}, f"{tool['name']}: {dump(listed)}"
        else:
            assert listed["properties"]["data"] == complete_data, f"{tool['name']}: {dump(listed)}"
