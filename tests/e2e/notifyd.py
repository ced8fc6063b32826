#!/usr/bin/env python3
"""A real desktop notification server for the end-to-end tests.

Owns `org.freedesktop.Notifications` on the session bus (the freedesktop Desktop
Notifications spec, as GNOME's and dunst's servers do) and appends every notification it is
sent to a JSON-lines file: {"app", "summary", "body", "actions", "id", "at"}. Usage:
notifyd.py OUT.jsonl

A user's click on a notification's button is the server's `ActionInvoked(id, key)` signal: the
tests "click" by calling `org.headroom.TestNotifyd.Click(id, key)` on the same object, which
emits exactly that signal, as GNOME's or dunst's server would.
"""
import asyncio
import json
import sys
import time

from dbus_next.aio import MessageBus
from dbus_next.service import ServiceInterface, method, signal


class Notifications(ServiceInterface):
    def __init__(self, out_path):
        super().__init__("org.freedesktop.Notifications")
        self.out_path = out_path
        self.next_id = 0

    @method()
    def GetCapabilities(self) -> "as":
        return ["body", "actions"]

    @method()
    def GetServerInformation(self) -> "ssss":
        return ["headroom-test-notifyd", "headroom", "1.0", "1.2"]

    @method()
    def Notify(self, app_name: "s", replaces_id: "u", app_icon: "s", summary: "s", body: "s",
               actions: "as", hints: "a{sv}", expire_timeout: "i") -> "u":
        self.next_id += 1
        with open(self.out_path, "a") as f:
            f.write(json.dumps({"app": app_name, "summary": summary, "body": body,
                                "actions": dict(zip(actions[::2], actions[1::2])),
                                "id": self.next_id, "at": time.time()}) + "\n")
        return self.next_id

    @method()
    def CloseNotification(self, id: "u"):
        self.NotificationClosed(id, 3)

    @signal()
    def NotificationClosed(self, id, reason) -> "uu":
        return [id, reason]

    @signal()
    def ActionInvoked(self, id, action_key) -> "us":
        return [id, action_key]


class Clicks(ServiceInterface):
    """The tests' hand on the mouse: a click on button `key` of notification `id`."""

    def __init__(self, server):
        super().__init__("org.headroom.TestNotifyd")
        self.server = server

    @method()
    def Click(self, id: "u", key: "s"):
        self.server.ActionInvoked(id, key)
        self.server.NotificationClosed(id, 2)


async def main(out_path):
    bus = await MessageBus().connect()
    server = Notifications(out_path)
    bus.export("/org/freedesktop/Notifications", server)
    bus.export("/org/freedesktop/Notifications", Clicks(server))
    await bus.request_name("org.freedesktop.Notifications")
    print("notifyd: ready", flush=True)
    await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
