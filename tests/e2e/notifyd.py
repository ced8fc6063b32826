#!/usr/bin/env python3
"""A real desktop notification server for the end-to-end tests.

Owns `org.freedesktop.Notifications` on the session bus (the freedesktop Desktop
Notifications spec, as GNOME's and dunst's servers do) and appends every notification it is
sent to a JSON-lines file: {"app", "summary", "body", "id", "at"}. Usage: notifyd.py OUT.jsonl
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


async def main(out_path):
    bus = await MessageBus().connect()
    bus.export("/org/freedesktop/Notifications", Notifications(out_path))
    await bus.request_name("org.freedesktop.Notifications")
    print("notifyd: ready", flush=True)
    await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
