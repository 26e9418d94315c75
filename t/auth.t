#!/usr/bin/perl

# AUTH and ACL with a single Redis whose default user has a password
# (requirepass) and which has an ACL user rrl (all commands, all keys) and
# an ACL user noscript (all commands but @scripting):
# - username=rrl password=...: limits exact; CLIENT LIST shows the
#   module's connections (one per worker, named nginx-redis-ratelimit) as
#   user=rrl;
# - password= alone: the default user (user=default), the same counts;
# - a wrong password (with or without username=), no password, or a user
#   that may not run scripts: every request gets the fail mode (open: 200
#   FAILED_OPEN; closed: 429 FAILED_CLOSED, no rate limit headers);
#   error.log names the failure (WRONGPASS / NOAUTH / NOPERM), not once per
#   request; the workers reconnect no faster than their backoff allows
#   (connections counted by Redis: INFO stats); no alert, crit or emerg.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis(password => 'default-secret');

is($t->redis('ACL', 'SETUSER', 'rrl', 'on', '>rrl-secret', '~*', '&*', '+@all'),
    'OK', 'ACL user rrl');
is($t->redis('ACL', 'SETUSER', 'noscript', 'on', '>noscript-secret', '~*', '&*',
    '+@all', '-@scripting'), 'OK', 'ACL user noscript, without @scripting');

my $conf = <<'EOF';
worker_processes 2;

http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% %%AUTH%% timeout=1s;
    redis_ratelimit_zone $arg_key zone=au rate=3r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=au;

        location / {
        }
        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
        }
    }
}
EOF

sub nginx_with {
    my ($auth, %o) = @_;
    (my $cf = $conf) =~ s/%%AUTH%%/$auth/;
    return $t->start_nginx($cf, %o);
}

sub seq { my $n = shift; $n->outcomes(@_) }

sub users {
    return join ' ', sort map { /\buser=(\S+)/ ? $1 : '?' }
        grep { /\bname=nginx-redis-ratelimit\b/ } $t->redis('CLIENT', 'LIST');
}

my $EXACT = '200 PASSED 2, 200 PASSED 1, 200 PASSED 0, 429 REJECTED 0';

# connections Redis has accepted so far (this one included)
sub connections {
    my ($n) = $t->redis('INFO', 'stats') =~ /total_connections_received:(\d+)/;
    return $n // 0;
}

my $na = nginx_with('username=rrl password=rrl-secret');
is(seq($na, '/?key=a', 4), $EXACT, 'username= password=: 3 pass, then rejected');
is($t->redis('EXISTS', 'rrl:{au:a}:sw'), 1, 'username= password=: the key in Redis');
is(users(), 'rrl rrl', 'CLIENT LIST: the two module connections are user=rrl');

my $nb = nginx_with('password=default-secret');
is(seq($nb, '/?key=b', 4), $EXACT, 'password= alone: 3 pass, then rejected');
is(seq($nb, '/?key=a', 1), '429 REJECTED 0', 'password= alone: the same counts');
is(users(), 'default default rrl rrl',
    'CLIENT LIST: two more module connections, user=default');

$na->stop;
$nb->stop;

for my $case (
    ['username=rrl password=wrong', 'a wrong password for rrl',
        qr/WRONGPASS|invalid username-password/],
    ['password=wrong', 'a wrong password for the default user',
        qr/WRONGPASS|invalid username-password/],
    ['username=nobody password=rrl-secret', 'an unknown user',
        qr/WRONGPASS|invalid username-password/],
    ['', 'no password', qr/NOAUTH|Authentication required/],
    ['username=noscript password=noscript-secret', 'a user without @scripting',
        qr/NOPERM|no permissions/])
{
    my ($auth, $name, $re) = @$case;
    my $before = connections();
    my $start = time;
    my $nw = nginx_with($auth, wait_connected => 0);
    my (%got, $headers);
    for my $i (1 .. 5) {
        for my $loc ('/', '/closed/') {
            my $r = $nw->get("$loc?key=w$i");
            $got{"$loc " . ($r->{status} // 'none') . ' '
                . ($r->{h}{'x-rl-status'} // 'none')}++;
            $headers++ if grep { /^x-ratelimit-|^retry-after$/ } keys %{ $r->{h} };
        }
        sleep 0.1;
    }
    my $secs = time - $start;
    # the INFO below is one connection more
    my $made = connections() - $before - 1;
    is_deeply(\%got, { '/ 200 FAILED_OPEN' => 5, '/closed/ 429 FAILED_CLOSED' => 5 },
        "$name: the fail mode");
    ok(!$headers, "$name: no rate limit headers");

    my @l = $nw->grep_log($re);
    ok(@l >= 1, "$name: error.log names the failure ($re)")
        or diag(join "\n", $nw->grep_log(qr/redis_ratelimit/));
    note("$name: " . ($l[0] // 'nothing logged'));
    my $max = 2 * (int($secs) + 2);
    cmp_ok(scalar @l, '<=', $max, "$name: logged " . scalar(@l) . ' times for '
        . sprintf('10 requests over %.1f s by 2 workers (at most %d)', $secs, $max));
    is($t->redis('EXISTS', "rrl:{au:w1}:sw"), 0, "$name: nothing counted");

    # a Redis that refuses the connection's setup is not hammered: each
    # worker reconnects with its backoff (50 ms doubling up to 500 ms, -25%
    # jitter: at most 5 attempts in the first 0.6 s, then one per 375 ms)
    my $cap = 2 * (6 + int(3 * $secs));
    cmp_ok($made, '<=', $cap, "$name: $made connections to Redis in "
        . sprintf('%.1f s by 2 workers (with the backoff: at most %d)', $secs, $cap));

    $nw->stop;
}

$t->done_testing;
