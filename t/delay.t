#!/usr/bin/perl

# delay=D (limit_req's model) on leaky_bucket: at rate=10r/s burst=5
# delay=0, 6 requests at once all pass and leave 100 ms apart; the same
# traffic over two nginx sharing Redis keeps the spacing; delay=2 lets the
# first 3 go at once; DELAYED, DELAYED_DRY_RUN (no wait) and
# $redis_ratelimit_delay; the metrics count "delayed"; nodelay is today's
# behaviour; a client that closes during its delay is finalized 499 and its
# slot stays taken; a reload during a delay lets it complete; fail local
# delays the same way while Redis is down.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Select;
use Socket qw(SOL_SOCKET SO_LINGER);
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = <<'EOF2';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=lb rate=10r/s algorithm=leaky_bucket burst=5;
    redis_ratelimit_zone $arg_key zone=slow rate=2r/s algorithm=gcra burst=3;
    redis_ratelimit_zone $arg_key zone=fw rate=10r/s algorithm=fixed_window;

    log_format rrl '$arg_key $arg_n $status $redis_ratelimit_status [$redis_ratelimit_delay]';
    access_log %%NGINX_DIR%%/rrl.log rrl;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-RL-Delay "[$redis_ratelimit_delay]" always;
        add_header X-Pid $pid always;

        location /d0 { redis_ratelimit zone=lb delay=0; try_files /index.html =404; }
        location /d2 { redis_ratelimit zone=lb delay=2; try_files /index.html =404; }
        location /nd { redis_ratelimit zone=lb nodelay; try_files /index.html =404; }
        location /default { redis_ratelimit zone=lb; try_files /index.html =404; }
        location /dry {
            redis_ratelimit zone=lb delay=0;
            redis_ratelimit_dry_run on;
            try_files /index.html =404;
        }
        location /slow { redis_ratelimit zone=slow delay=0; try_files /index.html =404; }
        location /fw { redis_ratelimit zone=fw nodelay; try_files /index.html =404; }
        location /both {
            redis_ratelimit zone=lb delay=0;
            redis_ratelimit zone=slow delay=0;
            try_files /index.html =404;
        }
        location /local {
            redis_ratelimit zone=lb delay=0;
            redis_ratelimit_fail local;
            try_files /index.html =404;
        }

        location = /metrics { redis_ratelimit_metrics; }
    }
}
EOF2

my $n = $t->start_nginx($conf);
my $n2 = $t->start_nginx($conf);

# sends every [nginx, uri] at once, one connection each, and reads them all
# together: each response with t, its completion in seconds from the first
# send, in the order sent
sub burst { RRL::Test::http_burst(map { [$_->[0]->port, $_->[1]] } @_) }

sub ms { sprintf '%.1f', $_[0] * 1000 }

sub delay_of { ($_[0]{h}{'x-rl-delay'} // '') =~ /^\[(.*)\]$/ ? $1 : undef }

# 7 at once at 10r/s burst=5 delay=0: 6 pass, the k-th (0..5) done no
# earlier than k x 100 ms - 5 ms, and not much later: the last within 900
# ms; the 7th is rejected at once

{
    my @all = burst(map { [$n, "/d0?key=spacing&n=$_"] } 0 .. 6);
    my @r = grep { ($_->{status} // 0) == 200 } @all;
    is(scalar @r, 6, 'delay=0: 6 of 7 pass');
    my ($rej) = grep { ($_->{status} // 0) != 200 } @all;
    is($rej->{status}, 429, 'delay=0: beyond the burst, rejected');
    cmp_ok($rej->{t}, '<', 0.09, 'delay=0: a rejection is not delayed');
    is(delay_of($rej), '', 'a rejection has no delay');
    my @done = sort { $a <=> $b } map { $_->{t} } @r;
    for my $k (0 .. 5) {
        cmp_ok($done[$k], '>=', $k * 0.1 - 0.005,
            "delay=0: request $k done at " . ms($done[$k]) . " ms, >= "
            . ($k * 100 - 5));
    }
    cmp_ok($done[0], '<', 0.09, 'delay=0: the first at once');
    cmp_ok($done[5], '<', 0.9, 'delay=0: the last before 900 ms: delayed, '
        . 'not slow');
    diag('delay=0 completions (ms): ' . join(' ', map { ms($_) } @done));

    my @st = sort map { $_->{h}{'x-rl-status'} // '-' } @r;
    is("@st", 'DELAYED DELAYED DELAYED DELAYED DELAYED PASSED',
        'delay=0: PASSED once, then DELAYED');

    my @d = sort { $a <=> $b } map { my $d = delay_of($_); length $d ? $d : 0 }
        @r;
    is(scalar(grep { !length delay_of($_) } @r), 1,
        '$redis_ratelimit_delay empty when not delayed');
    is(scalar(grep { delay_of($_) =~ /^\d+\.\d{3}$/ } @r), 5,
        '$redis_ratelimit_delay: ms with 3 decimals');
    for my $k (1 .. 5) {
        ok($d[$k] > $k * 100 - 5 && $d[$k] <= $k * 100,
            "delay=0: delay $k is $d[$k] ms");
    }
}

# the same traffic over two nginx sharing Redis: 3 to each at once, the
# combined spacing kept

{
    my @r = burst(map { [$_ % 2 ? $n2 : $n, "/d0?key=two&n=$_"] } 0 .. 5);
    is(scalar(grep { ($_->{status} // 0) == 200 } @r), 6,
        'two nginx: 6 of 6 pass');
    # each in its slot of the combined schedule, k x 100 ms from the first
    # (as above: a gap to the one before also counts that one's lateness
    # on a loaded machine), and each delay exactly its slot's
    my @done = sort { $a <=> $b } map { $_->{t} } @r;
    for my $k (1 .. 5) {
        cmp_ok($done[$k], '>=', $k * 0.1 - 0.005,
            "two nginx: request $k done at " . ms($done[$k]) . ' ms, >= '
            . ($k * 100 - 5));
    }
    my @d = sort { $a <=> $b } map { my $d = delay_of($_); length $d ? $d : 0 }
        @r;
    for my $k (1 .. 5) {
        ok($d[$k] > $k * 100 - 5 && $d[$k] <= $k * 100,
            "two nginx: delay $k is $d[$k] ms");
    }
    cmp_ok($done[5], '<', 0.9, 'two nginx: the last before 900 ms');
    diag('two nginx completions (ms): ' . join(' ', map { ms($_) } @done));
}

# delay=2: the first 3 at once, the 4th and later delayed

{
    my @r = burst(map { [$n, "/d2?key=d2&n=$_"] } 0 .. 5);
    is(scalar(grep { ($_->{status} // 0) == 200 } @r), 6, 'delay=2: 6 pass');
    my @done = sort { $a <=> $b } map { $_->{t} } @r;
    cmp_ok($done[2], '<', 0.08, 'delay=2: the first 3 at once ('
        . ms($done[2]) . ' ms)');
    for my $k (3 .. 5) {
        cmp_ok($done[$k], '>=', ($k - 2) * 0.1 - 0.005,
            "delay=2: request $k done at " . ms($done[$k]) . ' ms');
    }
    my @st = sort map { $_->{h}{'x-rl-status'} // '-' } @r;
    is("@st", 'DELAYED DELAYED DELAYED PASSED PASSED PASSED',
        'delay=2: 3 PASSED, 3 DELAYED');
}

# two limits: a request waits for the longer delay (2r/s: 500 ms apart)

{
    my @r = burst(map { [$n, "/both?key=both&n=$_"] } 0 .. 2);
    my @done = sort { $a <=> $b } map { $_->{t} } @r;
    for my $k (1 .. 2) {
        cmp_ok($done[$k], '>=', $k * 0.5 - 0.005,
            "two limits: request $k done at " . ms($done[$k]) . ' ms');
    }
    cmp_ok($done[2], '<', 1.4, 'two limits: the last before 1400 ms');
    my @d = sort { $a <=> $b } grep { length } map { delay_of($_) } @r;
    ok(@d == 2 && $d[1] > 995 && $d[1] <= 1000,
        "two limits: the longer delay shown (@d)");
}

# nodelay, and no parameter: today's behaviour, 6 at once, the 7th rejected

for my $loc (qw(nd default)) {
    my @r = burst(map { [$n, "/$loc?key=$loc&n=$_"] } 0 .. 5);
    my @done = sort { $a <=> $b } map { $_->{t} } @r;
    cmp_ok($done[5], '<', 0.08, "$loc: 6 at once (" . ms($done[5]) . ' ms)');
    my @st = map { $_->{h}{'x-rl-status'} // '-' } @r;
    is("@st", join(' ', ('PASSED') x 6), "$loc: all PASSED");
    is(scalar(grep { !length delay_of($_) } @r), 6, "$loc: no delay shown");
    is($n->get("/$loc?key=$loc")->{status}, 429, "$loc: the 7th rejected");
}

# dry run: DELAYED_DRY_RUN, the delay shown, no wait

{
    my @r = burst(map { [$n, "/dry?key=dry&n=$_"] } 0 .. 5);
    my @done = sort { $a <=> $b } map { $_->{t} } @r;
    cmp_ok($done[5], '<', 0.08, 'dry run: no wait (' . ms($done[5]) . ' ms)');
    my @st = sort map { $_->{h}{'x-rl-status'} // '-' } @r;
    is("@st", join(' ', ('DELAYED_DRY_RUN') x 5, 'PASSED'),
        'dry run: DELAYED_DRY_RUN');
    my @d = sort { $a <=> $b } grep { length } map { delay_of($_) } @r;
    is(scalar @d, 5, 'dry run: the delay that would have been applied');
    ok($d[4] > 495 && $d[4] <= 500, "dry run: the longest is $d[4] ms");
}

# metrics: delayed and delayed_dry_run counted in the zone, on each nginx

sub counter {
    my ($nginx, $zone, $status) = @_;
    my $body = $nginx->get('/metrics')->{body};
    return $body =~ /^redis_ratelimit_requests_total\{zone="\Q$zone\E",status="\Q$status\E"\} (\d+)$/m
        ? $1 : undef;
}

{
    # delay=0: 5, on two nginx: 5, two limits: 2 (in each zone), delay=2: 3
    is(counter($n, 'lb', 'delayed') + counter($n2, 'lb', 'delayed'), 15,
        'metrics: delayed counted');
    is(counter($n, 'lb', 'delayed_dry_run'), 5,
        'metrics: delayed_dry_run counted');
    is(counter($n, 'fw', 'delayed'), 0, 'metrics: delayed listed for every zone');
}

# a client that closes during its delay: 499, the worker stays, its slot
# stays taken

{
    my @pids = $n->worker_pids;
    is($n->get('/slow?key=abort&n=first')->{status}, 200, 'abort: first passes');
    my $s = RRL::Test::http_send($n->port, 'GET', '/slow?key=abort&n=gone');
    sleep 0.15;
    setsockopt($s, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    close $s;

    my $log = $n->dir . '/rrl.log';
    my $line;
    for (1 .. 100) {
        ($line) = grep { /^abort gone / } split /\n/, RRL::Test::read_file($log);
        last if $line;
        sleep 0.02;
    }
    like($line // '', qr/^abort gone 499 DELAYED \[\d+\.\d{3}\]$/,
        'abort: finalized 499 during its delay, as limit_req');

    my $r = $n->get('/slow?key=abort&n=next');
    is($r->{status}, 200, 'abort: the next request works');
    is($r->{h}{'x-rl-status'}, 'DELAYED', 'abort: the next one is delayed');
    # 2r/s: its slot is the third, 1 s after the first, less the time gone
    cmp_ok(delay_of($r), '>', 650,
        'abort: the slot of the one that closed stays taken ('
        . delay_of($r) . ' ms)');
    is_deeply([$n->worker_pids], \@pids, 'abort: the same worker');
    is($n->get('/fw?key=after-abort')->{status}, 200, 'abort: others work');
}

# a reload during a delay: the old worker waits for it, the request passes

{
    is($n->get('/slow?key=reload&n=first')->{status}, 200, 'reload: first');
    my $t0 = time;
    my $s = RRL::Test::http_send($n->port, 'GET', '/slow?key=reload&n=delayed');
    sleep 0.1;
    $n->reload;
    my $r = RRL::Test::http_read($s, timeout => 5);
    my $took = time - $t0;
    is($r->{status}, 200, 'reload: the delayed request completes with 200');
    is($r->{h}{'x-rl-status'}, 'DELAYED', 'reload: it was DELAYED');
    cmp_ok($took, '>=', 0.45, 'reload: after its delay (' . ms($took) . ' ms)');
    is($n->get('/fw?key=after-reload')->{status}, 200, 'reload: new workers');
}

# fail local with Redis down: the local decision delays the same way

$t->stop_redis;

{
    my @all = burst(map { [$n2, "/local?key=local&n=$_"] } 0 .. 6);
    my @r = grep { ($_->{status} // 0) == 200 } @all;
    is(scalar @r, 6, 'fail local: 6 of 7 pass');
    my ($rej) = grep { ($_->{status} // 0) != 200 } @all;
    is($rej->{status}, 429, 'fail local: beyond the burst, rejected');
    my @st = map { $_->{h}{'x-rl-status'} // '-' } @r;
    is("@st", join(' ', ('FAILED_LOCAL') x 6), 'fail local: FAILED_LOCAL');
    my @done = sort { $a <=> $b } map { $_->{t} } @r;
    for my $k (1 .. 5) {
        cmp_ok($done[$k], '>=', $k * 0.1 - 0.005,
            "fail local: request $k done at " . ms($done[$k]) . ' ms');
    }
    cmp_ok($done[5], '<', 0.9, 'fail local: the last before 900 ms');
    is(scalar(grep { delay_of($_) =~ /^\d+\.\d{3}$/ } @r), 5,
        'fail local: $redis_ratelimit_delay shown');
}

$t->done_testing;
