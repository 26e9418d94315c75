#!/usr/bin/perl

# The circuit breaker and the cap on parked requests. With Redis hung
# (SIGSTOP), max_failures timeouts in a row open the circuit: then requests
# get the fail mode at once, without waiting on Redis; after cooldown one
# probe goes out, and the circuit closes when Redis answers again. Both
# state changes are logged once, at warn. Beyond max_parked requests waiting
# for Redis, the fail mode answers at once.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=100ms
                           max_failures=3 cooldown=700ms;
    redis_ratelimit_zone $arg_key zone=cb rate=1000r/h algorithm=fixed_window;
    log_format timing '$arg_key $request_time';

    server {
        access_log %%TESTDIR%%/timing0.log timing;
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=cb;
        }
    }
}
EOF

my $r = $n->get('/?key=a');
is($r->{h}{'x-rl-status'}, 'PASSED', 'Redis up: PASSED');

# hung Redis: three timeouts in a row open the circuit

$t->signal_redis('STOP');

my @waited = map { $n->get("/?key=w$_") } 1 .. 3;
for my $i (0 .. 2) {
    is($waited[$i]{h}{'x-rl-status'}, 'FAILED_OPEN', "timeout $i: FAILED_OPEN");
    cmp_ok($waited[$i]{time}, '>=', 0.09, "timeout $i: waited for the timeout");
}

my @fast = map { $n->get("/?key=f$_") } 1 .. 10;
is(join(' ', map { $_->{h}{'x-rl-status'} } @fast), join(' ', ('FAILED_OPEN') x 10),
    'circuit open: the fail mode answers');
my @slow = grep { $_->{time} >= 0.09 } @fast;
is(scalar @slow, 0, 'circuit open: no request waits for the timeout')
    or diag(join ' ', map { sprintf '%.3f', $_->{time} } @fast);

is(scalar($n->grep_log(qr/\[warn\] .*redis_ratelimit: 3 failures in a row on 127\.0\.0\.1:\d+, circuit open/)),
    1, 'circuit open: logged once, at warn');

# after the cooldown one probe waits (and fails), the others do not

sleep 0.8;
my @probe = $n->parallel(map { "/?key=p$_" } 1 .. 4);
my %probe_time = request_times('timing0.log', qr/^p\d$/, 4);
is(scalar(grep { $_ >= 0.09 } values %probe_time), 1,
    'half open: exactly one request probes Redis (waits for the timeout)')
    or diag(explain \%probe_time);
is(join(' ', map { $_->{h}{'x-rl-status'} } @probe), join(' ', ('FAILED_OPEN') x 4),
    'half open, Redis still hung: FAILED_OPEN');

# Redis answers again: the next probe closes the circuit

$t->signal_redis('CONT');

my ($closed_after, $start) = (undef, time);
while (time - $start < 3) {
    my $r = $n->get('/?key=back');
    if (($r->{h}{'x-rl-status'} // '') eq 'PASSED') {
        $closed_after = time - $start;
        last;
    }
    sleep 0.05;
}
ok(defined $closed_after && $closed_after < 1.5,
    'Redis back: PASSED again within the cooldown '
    . (defined $closed_after ? sprintf('(%.2f s)', $closed_after) : '(never)'));
ok($n->wait_log(qr/\[warn\] .*redis_ratelimit: 127\.0\.0\.1:\d+ answers again, circuit closed/, 1, 2),
    'circuit closed: logged at warn');
is(scalar($n->grep_log(qr/circuit closed/)), 1, 'circuit closed: logged once');
is(scalar($n->grep_log(qr/circuit open/)), 1, 'the failed probe did not log again');

$r = $n->get('/?key=back');
is($r->{h}{'x-ratelimit-remaining'}, 998, 'counting as usual after the circuit closed');

# at most max_parked requests wait for Redis

my $m = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=300ms
                           max_failures=1000 max_parked=2;
    redis_ratelimit_zone $arg_key zone=mp rate=1000r/h algorithm=fixed_window;
    log_format timing '$arg_key $request_time';

    server {
        access_log %%TESTDIR%%/timing1.log timing;
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=mp;
            redis_ratelimit_fail closed;
        }
    }
}
EOF

$t->signal_redis('STOP');
my @capped = $m->parallel(map { "/?key=c$_" } 1 .. 6);
$t->signal_redis('CONT');

my %capped_time = request_times('timing1.log', qr/^c\d$/, 6);
is(scalar(grep { $_ >= 0.29 } values %capped_time), 2,
    'max_parked=2: two requests waited for Redis')
    or diag(explain \%capped_time);
is(scalar(grep { $_ < 0.2 } values %capped_time), 4,
    'max_parked=2: the other four were answered at once');
is(join(' ', map { "$_->{status} $_->{h}{'x-rl-status'}" } @capped),
    join(' ', ('429 FAILED_CLOSED') x 6), 'all answered by fail closed');
ok($m->wait_log(qr/redis_ratelimit: 2 requests already wait for 127\.0\.0\.1:\d+/, 1, 2),
    'the cap is logged');

# $request_time of the requests whose key matches, from an access log
# (written just after each response: wait until all are there)
sub request_times {
    my ($file, $key_re, $expect) = @_;
    my %times;
    my $deadline = time + 2;
    do {
        %times = ();
        for my $line (split /\n/, RRL::Test::read_file($t->testdir . "/$file")) {
            my ($key, $time) = split / /, $line;
            $times{$key} = $time if $key =~ $key_re;
        }
    } while (keys %times < $expect && time < $deadline && sleep 0.02);
    return %times;
}

$t->done_testing;
