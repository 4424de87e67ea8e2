# Homebrew formula for qex, published as qex-queue (macOS and Linuxbrew).
#
# qex and its four dependencies are installed into a private virtualenv. The resource
# blocks pin the versions qex is tested with; `brew update-python-resources qex-queue`
# regenerates them. The `sha256` of qex itself is set when a release is published (see
# packaging/README.md); a formula with the placeholder below fails its checksum on purpose.
class QexQueue < Formula
  include Language::Python::Virtualenv

  desc "Queued executor for one machine: claims, a queue, and jobs that outlive the shell"
  homepage "https://pypi.org/project/qex-queue/"
  url "https://files.pythonhosted.org/packages/source/q/qex-queue/qex_queue-0.7.0.tar.gz"
  sha256 "RELEASE_SHA256_OF_qex_queue-0.7.0.tar.gz"
  license "MIT"

  depends_on "libyaml"
  depends_on "python@3.13"

  resource "click" do
    url "https://files.pythonhosted.org/packages/source/c/click/click-8.5.1.tar.gz"
    sha256 "9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4"
  end

  resource "psutil" do
    url "https://files.pythonhosted.org/packages/source/p/psutil/psutil-7.2.2.tar.gz"
    sha256 "0746f5f8d406af344fd547f1c8daa5f5c33dbc293bb8d6a16d80b4bb88f59372"
  end

  resource "pyyaml" do
    url "https://files.pythonhosted.org/packages/source/p/pyyaml/pyyaml-6.0.4.tar.gz"
    sha256 "e24bf71af8a432d7808fabff134d38dfe16d3cbb41f2873bb4b1e42422de0a1a"
  end

  resource "tomli-w" do
    url "https://files.pythonhosted.org/packages/source/t/tomli_w/tomli_w-1.2.0.tar.gz"
    sha256 "2dd14fac5a47c27be9cd4c976af5a12d87fb1f0b4512f81d69cce3b35ae25021"
  end

  # Build-time only: renders the man pages from the click commands.
  resource "click-man" do
    url "https://files.pythonhosted.org/packages/py3/c/click-man/click_man-0.6.0-py3-none-any.whl"
    sha256 "38bcaaada1090ca0729580123115f23f128aedbf50d774331d4673ab4bc7bbea"
  end

  def install
    virtualenv_install_with_resources
    # Runs `qex completion bash|zsh|fish` with the qex just installed.
    generate_completions_from_executable(bin/"qex", "completion", shells: [:bash, :zsh, :fish])
    # One man page per command, rendered from the click commands by click-man.
    system libexec/"bin/python", "packaging/build-extras.py", buildpath/"extras"
    man1.install Dir[buildpath/"extras/man/man1/*.1"]
    doc.install Dir["docs/*.md"]
  end

  def caveats
    <<~EOS
      qex starts its coordinator by itself when a command needs one; there is no
      service to enable on macOS. Memory limits ([enforce] mode soft/hard) need Linux
      with cgroup v2 and systemd, so on macOS a claim only steers the queue.
      Start with:
        qex help agents
    EOS
  end

  test do
    assert_match "qex for agents", shell_output("#{bin}/qex help agents")
    assert_match "\"$schema\"", shell_output("#{bin}/qex schema status")
    shell_output("#{bin}/qex help no-such-topic 2>&1", 2)
    # A real job against a private state: every path qex writes lies under testpath, so the
    # test never touches the user's queue (~/.local/state/qex) or a shared peers directory.
    ENV["HOME"] = testpath
    ENV["XDG_STATE_HOME"] = testpath/"state"
    ENV["XDG_CONFIG_HOME"] = testpath/"config"
    ENV["XDG_RUNTIME_DIR"] = testpath/"run"
    ENV["TMPDIR"] = testpath/"tmp"
    ENV["QEX_PEERS_DIR"] = testpath/"peers"
    ENV["QEX_IDLE_EXIT_SECS"] = "30"
    (testpath/"run").mkpath
    (testpath/"tmp").mkpath
    chmod 0700, testpath/"run"
    assert_match "qex", shell_output("#{bin}/qex --version")
    # The coordinator starts, queues the job, a supervisor runs it, the record says so.
    assert_match "completed", shell_output("#{bin}/qex submit --wait -- true 2>&1")
    assert_match "no limit", shell_output("#{bin}/qex config show")
    require "json"
    info = JSON.parse(shell_output("#{bin}/qex info --json --no-start"))
    assert_equal "portable", info["platform"]["implementation"] if OS.mac?
    Process.kill("TERM", info["pid"])
  end
end
