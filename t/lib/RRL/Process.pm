package RRL::Process;

# The processes of the servers that RRL::Cluster and RRL::Sentinel start:
# run in the foreground by the test, out of its process group, killed with
# it whatever kills it (PR_SET_PDEATHSIG), stopped with TERM then KILL.
#
#   my $pid = RRL::Process::spawn([redis-server, ...], $dir);
#   RRL::Process::stop_pid($pid);     # TERM, KILL after 5 s; reaped
#   RRL::Process::reap($pid, 5);      # waits for an exit (1) or not (0)

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);

our @EXPORT_OK = qw(pdeathsig spawn reap stop_pid);

# PR_SET_PDEATHSIG(SIGKILL) in the child, before exec: a server dies with
# the test process, whatever kills it (x86_64 and aarch64 Linux)
sub pdeathsig {
    my %nr = (x86_64 => 157, aarch64 => 167);
    my $arch = (POSIX::uname())[4];
    syscall($nr{$arch}, 1, 9) if $^O eq 'linux' && $nr{$arch};
}

# spawn(\@cmd, $dir): runs a server in the foreground, stdout and stderr
# to $dir/stdout; returns its pid
sub spawn {
    my ($cmd, $dir) = @_;
    my $pid = fork;
    croak "fork: $!" unless defined $pid;
    if ($pid == 0) {
        pdeathsig();
        setpgrp(0, 0);    # not in the test's process group (Ctrl-C)
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$dir/stdout";
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec @$cmd; }
        POSIX::_exit(127);
    }
    return $pid;
}

sub reap {
    my ($pid, $timeout) = @_;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        my $w = waitpid($pid, WNOHANG);
        return 1 if $w == $pid || $w == -1;
        sleep 0.01;
    }
    return 0;
}

sub stop_pid {
    my ($pid) = @_;
    return unless $pid;
    kill 'TERM', $pid;
    return if reap($pid, 5);
    kill 'KILL', $pid;
    reap($pid, 5);
}

1;
