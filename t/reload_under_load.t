#!/usr/bin/perl

# nginx -s reload (HUP) and a graceful quit (QUIT) while background clients
# send requests: no request dropped (each gets a complete 200 response),
# also requests parked on a stopped Redis when the signal comes (reload:
# Redis back within the timeout, PASSED; quit: Redis stopped longer than
# the timeout, FAILED_OPEN, then nginx exits); for the quit, every request
# started before it completes; no [alert] ("open socket ... left in
# connection") or crash in error.log.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
worker_processes 2;
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=1s;
    redis_ratelimit_zone $arg_key zone=rl rate=100000000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=rl;
    }
}
EOF2

my $port = $n->port;
my $dir = $t->testdir;
my $master = $n->{pid};

sub outcome {
    my ($r) = @_;
    my $ok = defined $r->{status} && $r->{status} == 200 && $r->{body} eq "OK\n"
        && !$r->{error};
    return $ok ? "200 " . ($r->{h}{'x-rl-status'} // 'none')
        : 'BAD ' . ($r->{status} // 'none') . ' ' . ($r->{error} // '')
          . ' ' . length($r->{body});
}

# background clients; each request: "start end outcome"
sub start_load {
    my ($k, $tag) = @_;
    my @pids;
    for my $c (1 .. $k) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            open my $out, '>', "$dir/$tag-$c.txt" or POSIX::_exit(1);
            $out->autoflush(1);
            my $i = 0;
            while (!-e "$dir/$tag-stop") {
                my $start = time;
                my $s = RRL::Test::http_send($port, 'GET', "/?key=$tag$c-" . ($i++ % 20));
                my $o;
                if ($s) {
                    $o = outcome(RRL::Test::http_read($s, timeout => 10));
                } else {
                    $o = 'REFUSED';
                    sleep 0.01;
                }
                printf $out "%.4f %.4f %s\n", $start, time, $o;
            }
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    return { tag => $tag, pids => \@pids, k => $k };
}

sub stop_load {
    my ($l) = @_;
    open my $fh, '>', "$dir/$l->{tag}-stop"; close $fh;
    waitpid($_, 0) for @{ $l->{pids} };
    my @req;
    for my $c (1 .. $l->{k}) {
        open my $in, '<', "$dir/$l->{tag}-$c.txt" or next;
        for (<$in>) {
            chomp;
            my ($s, $e, $o) = split / /, $_, 3;
            push @req, [$s, $e, $o];
        }
    }
    return @req;
}

sub summary {
    my %c;
    $c{ $_->[2] }++ for @_;
    return join ', ', map { "$_ x$c{$_}" } sort keys %c;
}

my @workers0 = $n->worker_pids;
is(scalar @workers0, 2, "two workers (@workers0)");

# 1. three reloads under load

{
    my $l = start_load(4, 'hup');
    sleep 0.3;
    for (1 .. 3) {
        $n->reload;
        sleep 0.3;
    }
    my @req = stop_load($l);
    my @bad = grep { $_->[2] !~ /^200 PASSED$/ } @req;
    ok(@req > 100 && !@bad, scalar(@req) . ' requests across 3 reloads, '
        . 'every one complete, 200 PASSED') or diag(summary(@req));
}

my @workers1 = $n->worker_pids;
is(scalar @workers1, 2, "after the reloads: two workers (@workers1)");
ok(!grep({ my $w = $_; grep { $_ == $w } @workers0 } @workers1),
    'after the reloads: all workers new');

# 2. a reload while requests wait on a stopped Redis: the old workers
# finish them (PASSED once Redis is back, within the timeout)

{
    my $l = start_load(4, 'hupstop');
    sleep 0.2;
    my @old = $n->worker_pids;
    $t->signal_redis('STOP');
    my @s = map { RRL::Test::http_send($port, 'GET', "/?key=parked$_") } 1 .. 20;
    sleep 0.2;
    kill 'HUP', $master;
    sleep 0.3;
    $t->signal_redis('CONT');
    my @r = map { outcome(RRL::Test::http_read($_)) } @s;
    is(join(', ', @r), join(', ', ('200 PASSED') x 20),
        'reload with 20 requests parked on a stopped Redis: all 200 PASSED');

    my $deadline = time + 5;
    sleep 0.05 while time < $deadline
        && grep { RRL::Test::Nginx::alive($_) } @old;
    ok(!grep({ RRL::Test::Nginx::alive($_) } @old), 'the old workers exited');

    my @req = stop_load($l);
    my @bad = grep { $_->[2] !~ /^200 (PASSED|FAILED_OPEN)$/ } @req;
    ok(@req > 20 && !@bad, scalar(@req) . ' background requests across it, '
        . 'every one complete (' . summary(@req) . ')');
}

# 3. a graceful quit under load, with requests parked on a stopped Redis

{
    my $l = start_load(4, 'quit');
    sleep 0.3;
    my @w = $n->worker_pids;
    $t->signal_redis('STOP');
    my @s = map { RRL::Test::http_send($port, 'GET', "/?key=q$_") } 1 .. 20;
    sleep 0.2;
    my $quit = time;
    kill 'QUIT', $master;

    # Redis stays stopped longer than the timeout: the parked requests
    # fail open after it, then the workers exit (with calls still owed)
    my @r = map { outcome(RRL::Test::http_read($_)) } @s;
    is(join(', ', @r), join(', ', ('200 FAILED_OPEN') x 20),
        'quit with 20 requests parked on a stopped Redis: all 200 FAILED_OPEN');

    my $deadline = time + 5;
    sleep 0.01 while time < $deadline
        && grep { RRL::Test::Nginx::alive($_) } $master, @w;
    my $took = time - $quit;
    ok(!grep({ RRL::Test::Nginx::alive($_) } $master, @w) && $took < 2.5,
        sprintf('nginx exited %.2f s after QUIT (timeout 1 s)', $took));
    $t->signal_redis('CONT');

    my @req = stop_load($l);
    my @before = grep { $_->[0] < $quit - 0.02 } @req;
    my @bad = grep { $_->[2] !~ /^200 (PASSED|FAILED_OPEN)$/ } @before;
    ok(@before > 20 && !@bad, scalar(@before) . ' background requests started '
        . 'before the quit, every one complete (' . summary(@before) . ')');
    note('after the quit: ' . summary(grep { $_->[0] >= $quit - 0.02 } @req));
}

my @alerts = $n->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal|open socket/);
is_deeply(\@alerts, [], 'no alert, open socket left, or crash in error.log');

$t->check_error_logs;
$t->done_testing;
