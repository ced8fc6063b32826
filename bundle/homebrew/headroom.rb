# Homebrew cask for Headroom: the menu-bar app, and the `headroom` command linked from inside
# it. The release workflow (.github/workflows/release.yml) fills in `version` and `sha256` for
# each tagged release and attaches the result (headroom.rb) to the draft release; copy that
# into the tap's Casks/ folder (see bundle/RELEASING.md). Not yet installed with brew anywhere:
# checked here with `ruby -c` only.
cask "headroom" do
  version "0.1.0"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"

  url "https://github.com/headroom-app/headroom/releases/download/v#{version}/Headroom_#{version}_universal.dmg"
  name "Headroom"
  desc "Menu-bar app and CLI that judge a job by swap growth and free memory"
  homepage "https://github.com/headroom-app/headroom"

  depends_on macos: ">= :monterey"

  app "Headroom.app"
  binary "#{appdir}/Headroom.app/Contents/MacOS/headroom"

  uninstall launchctl: "Headroom",
            quit:      "app.headroom.menubar"

  zap trash: [
    "~/Library/Application Support/app.Headroom.Headroom",
    "~/Library/Caches/app.headroom.menubar",
    "~/Library/LaunchAgents/Headroom.plist",
    "~/Library/Preferences/app.headroom.menubar.plist",
    "~/Library/Saved Application State/app.headroom.menubar.savedState",
    "~/Library/WebKit/app.headroom.menubar",
  ]
end
