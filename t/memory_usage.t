#!/usr/bin/perl

# The "state per key" column of the README's Algorithms table, measured:
# each algorithm's state is made through the module (zone "api", client
# key 203.0.113.7, so the key is named as the README says:
# rrl:{api:203.0.113.7}:<tag>), after one request of cost 1 on a fresh
# key, and for sliding_log after 3 requests and after a request of cost
# 100 on another key of the same length; then MEMORY USAGE of each key.
# The test prints the column from the measurement and, when the server is
# Redis 7.0 (the README's figures are Redis 7.0's), asserts that the
# README's column gives exactly these figures; when it is the Valkey the
# README names (RRL_REDIS_SERVER=valkey-server), that it takes the bytes
# less a key that the README says. Another server only prints its own.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

sub conf {
    my ($zone) = @_;
    return <<"EOF";
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone \$arg_k zone=api $zone;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            root %%TESTDIR%%/html;
            redis_ratelimit zone=api cost=\$arg_c;
        }
    }
}
EOF
}

# [row of the README, algorithm, tag, requests as [key, cost] pairs]
my @cases = (
    ['fixed_window', 'rate=100r/m algorithm=fixed_window', 'fw'],
    ['sliding_window', 'rate=100r/m algorithm=sliding_window', 'sw'],
    ['token_bucket', 'rate=100r/m algorithm=token_bucket', 'tb'],
    ['leaky_bucket', 'rate=100r/m algorithm=leaky_bucket burst=10', 'lb'],
    ['sliding_log', 'rate=1000r/m algorithm=sliding_log', 'sl'],
);

my $n;
my %measured;    # algorithm => [bytes] (sliding_log: for 3, for 100)

for my $case (@cases) {
    my ($name, $zone, $tag) = @$case;
    if ($n) { $n->reload(conf($zone)); } else { $n = $t->start_nginx(conf($zone)); }

    my @sets = $name eq 'sliding_log'
        ? (['203.0.113.7', 1, 3], ['203.0.113.8', 100, 1])
        : (['203.0.113.7', 1, 1]);
    for my $set (@sets) {
        my ($key, $cost, $count) = @$set;
        for (1 .. $count) {
            my $r = $n->get("/?k=$key&c=$cost");
            is($r->{status}, 200, "$name: key $key, cost $cost passes");
        }
        my $rkey = "rrl:{api:$key}:$tag";
        my $bytes = $t->redis('MEMORY', 'USAGE', $rkey);
        like($bytes, qr/^\d+$/, "$name: MEMORY USAGE of $rkey") or next;
        push @{ $measured{$name} }, $bytes;
    }
}

# the column as the README gives it: one figure, or sliding_log's two
my %column;
my ($table) = RRL::Test::read_file("$FindBin::Bin/../README.md")
    =~ /^## Algorithms\n(.*?)^#/ms;
for my $row (split /\n/, $table // '') {
    my (undef, $alg, undef, $state) = split /\s*\|\s*/, $row;
    next unless defined $state && $alg =~ /^`(\w+)`/;
    my $name = $1;
    $column{$name} = [map { s/,//gr } $state =~ /\b([\d,]+) B\b/g];
}
is(join(' ', sort keys %column), join(' ', sort map { $_->[0] } @cases),
    'the README\'s table has a row for each algorithm');

my $server = join ' ', grep { /^(redis|valkey)_version:/ }
    map { s/\r//r } $t->redis('INFO', 'server');
my $redis70 = $server =~ /^redis_version:7\.0\./ && $server !~ /valkey/;

diag("state per key (MEMORY USAGE, $server):");
for my $case (@cases) {
    my $name = $case->[0];
    my @b = @{ $measured{$name} || [] };
    diag($name eq 'sliding_log'
        ? sprintf('| `%s` | %s B for 3, %s B for 100 |', $name, @b[0, 1])
        : sprintf('| `%s` | %s B |', $name, $b[0] // '?'));
}

# the README's sentence on Valkey: "Valkey V takes D bytes less a key"
my ($valkey, $less) = RRL::Test::read_file("$FindBin::Bin/../README.md")
    =~ /Valkey (\d+) takes (\d+) bytes less a key/;
ok(defined $less, 'the README says what Valkey takes');
if (defined $less && $server =~ /valkey_version:\Q$valkey\E\./) {
    for my $case (@cases) {
        my $name = $case->[0];
        is(join(' ', map { $_ - $less } @{ $column{$name} || [] }),
            join(' ', @{ $measured{$name} || [] }),
            "$name: Valkey $valkey takes $less bytes less than the README's figure");
    }
}

SKIP: {
    skip "the README's figures are Redis 7.0's, this is $server", scalar(@cases)
        unless $redis70;
    for my $case (@cases) {
        my $name = $case->[0];
        is(join(' ', @{ $column{$name} || [] }),
            join(' ', @{ $measured{$name} || [] }),
            "$name: the README's state per key is what Redis 7.0 measures");
    }
}

$t->done_testing;
