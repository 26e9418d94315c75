#!/usr/bin/perl
# Where an EVALSHA of the script spends its time inside Redis, without
# nginx: the batch form as the module sends it (one zone, requests of one
# limit each, cost 1, keys cycling through 10,000 in their window, every
# request passing; then all on one key, a hot key), at batch sizes 1, 5,
# 20 and 50, pipelined 32 calls deep. Redis's own INFO commandstats gives
# the microseconds a call; a straight line through the sizes splits them
# into the fixed cost of a call and the cost of an entry. Beside it, for scale: a script that only
# returns (EVALSHA with the same arguments), one that reads and writes each
# key (GET + SET KEEPTTL, the least an entry can do with the state as it is
# stored), and native GET / SET KEEPTTL / INCR; then what one operation of
# an entry costs inside a script (redis.call GET and SET, TIME, parsing and
# formatting a state, a table, a closure). Prints figures; asserts nothing;
# never run by CI. Loopback only; about 40 s.
#
#   bench/script-profile.pl [--server redis-server|valkey-server | --port P]
#                           [--only (the scripts' rows alone)]
#                           [--sizes "1 5 20 50"]
#                           [--algorithms "fixed_window sliding_window"]
#                           [--entries N (40000 a batch size)]
#                           [--lua DIR (lua/)] [--against DIR]
#
# --against DIR: the same rows for the script of another lua/ directory
# (an older version: git archive), in the same Redis, rows interleaved.

use strict;
use warnings;

use FindBin;
use File::Temp qw(tempdir);
use Getopt::Long;
use IO::Socket::INET;
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(time sleep);

my $server = 'redis-server';
my $algorithms = 'fixed_window sliding_window';
my $entries = 40000;    # entries a size, per figure
my $root = "$FindBin::Bin/..";
my $lua = "$root/lua";
my ($against, $port, $only);
GetOptions('server=s' => \$server, 'algorithms=s' => \$algorithms,
    'entries=i' => \$entries, 'lua=s' => \$lua, 'against=s' => \$against,
    'port=i' => \$port, 'only' => \$only, 'sizes=s' => \my $sizes)
    or die "bad options\n";

my $dir = tempdir('rrl-script-profile.XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $own = !$port;
if ($own) {
    $port = 20000 + int(rand(9000));
    system($server, '--port', $port, '--bind', '127.0.0.1', '--save', '',
        '--appendonly', 'no', '--daemonize', 'yes', '--logfile',
        "$dir/redis.log", '--dir', $dir) == 0 or die "cannot start $server\n";
}
END { system("redis-cli -p $port shutdown nosave >/dev/null 2>&1") if $own }

my $s;
for (1 .. 50) {
    $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port)
        and last;
    sleep 0.1;
}
die "no connection to $server\n" unless $s;
setsockopt($s, IPPROTO_TCP, TCP_NODELAY, 1);

# the script of a lua/ directory, as tools/embed-lua.sh embeds it
sub slurp { local (@ARGV, $/) = @_; <> }
sub script_of {
    my ($d) = @_;
    return join '', map { slurp($_) }
        (grep { !/ratelimit\.lua$/ } sort glob("$d/*.lua")), "$d/ratelimit.lua";
}

sub command {
    my $out = '*' . scalar(@_) . "\r\n";
    $out .= '$' . length($_) . "\r\n$_\r\n" for @_;
    return $out;
}

my $in = '';
sub read_reply {
    while (1) {
        if (my $r = parse(\$in, 0)) {
            substr($in, 0, $r->[1]) = '';
            return $r->[0];
        }
        my $n = sysread($s, my $buf, 1 << 20);
        die "connection closed\n" unless $n;
        $in .= $buf;
    }
}

# the reply at $pos of $$b: [value, the position after it]; undef when it
# is not all there yet; an error's value is "ERROR: <text>"
sub parse {
    my ($b, $pos) = @_;
    my $eol = index($$b, "\r\n", $pos);
    return undef if $eol < 0;
    my $t = substr($$b, $pos, 1);
    my $line = substr($$b, $pos + 1, $eol - $pos - 1);
    my $next = $eol + 2;
    return [$line, $next] if $t eq '+' || $t eq ':';
    return ["ERROR: $line", $next] if $t eq '-';
    if ($t eq '$') {
        return [undef, $next] if $line < 0;
        return undef if length($$b) < $next + $line + 2;
        return [substr($$b, $next, $line), $next + $line + 2];
    }
    die "bad reply: $t$line\n" unless $t eq '*';
    my @a;
    for (1 .. $line) {
        my $r = parse($b, $next) or return undef;
        push @a, $r->[0];
        $next = $r->[1];
    }
    return [\@a, $next];
}

sub call { syswrite($s, command(@_)); return read_reply() }

# runs the commands, depth in flight at a time; dies on an error reply
sub pipeline {
    my ($commands, $depth) = @_;
    my ($sent, $got) = (0, 0);
    while ($got < @$commands) {
        my $out = '';
        while ($sent < @$commands && $sent - $got < $depth) {
            $out .= $commands->[$sent++];
        }
        syswrite($s, $out) if length $out;
        my $r = read_reply();
        die "$r\n" if !ref $r && defined $r && $r =~ /^ERROR/;
        $got++;
    }
}

sub stats {
    my %c;
    for (split /\r?\n/, call('INFO', 'commandstats')) {
        $c{$1} = { calls => $2, usec => $3 }
            if /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/;
    }
    return \%c;
}

# usec a call of command $name over the commands given
sub measure {
    my ($name, $commands) = @_;
    call('CONFIG', 'RESETSTAT');
    pipeline($commands, 32);
    my $c = stats()->{$name} or die "no $name in commandstats\n";
    return $c->{usec} / $c->{calls};
}

my $tags = { fixed_window => 'fw', sliding_window => 'sw',
    token_bucket => 'tb', leaky_bucket => 'lb', sliding_log => 'sl' };
my @sizes = split ' ', ($sizes // '1 5 20 50');
my $nkeys = 10000;

my @scripts = (['', $lua], $against ? (['old ', $against]) : ());
for (@scripts) {
    my $text = script_of($_->[1]);
    my $sha = call('SCRIPT', 'LOAD', $text);
    die "SCRIPT LOAD: $sha\n" if $sha =~ /^ERROR/;
    push @$_, $sha;
    # a script that takes runs says so in its batch form's description
    push @$_, $text =~ /"\*<r>"/ ? 1 : 0;
}
my $noop = call('SCRIPT', 'LOAD', 'return 0');
my $getset = call('SCRIPT', 'LOAD', <<'LUA');
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  redis.call('SET', KEYS[i], v or '1:1', 'KEEPTTL')
end
return 0
LUA

# the module's batch form: "batch", now ("": TIME), 1 zone, then n x (1, 1,
# 1), or as one run ("*n", 1, 1, 1) when the script takes runs
sub batch {
    my ($sha, $alg, $n, $k, $runs, $one_key) = @_;
    my @keys = map { "rrl:{p:" . ($one_key ? 'hot' : ($k + $_) % $nkeys)
        . "}:$tags->{$alg}" } 0 .. $n - 1;
    return command('EVALSHA', $sha, $n, @keys, 'batch', '', 1, $alg,
        1000000000, 1000, 0, $runs && $n > 1 ? ("*$n", 1, 1, 1)
        : (map { (1, 1, 1) } 1 .. $n));
}

sub fit {
    my ($points) = @_;    # [[n, usec], ...]: usec = fixed + n * entry
    return (0, $points->[0][1] / $points->[0][0]) if @$points == 1;
    my ($sx, $sy, $sxx, $sxy, $m) = (0, 0, 0, 0, scalar @$points);
    for (@$points) {
        my ($x, $y) = @$_;
        $sx += $x; $sy += $y; $sxx += $x * $x; $sxy += $x * $y;
    }
    my $entry = ($m * $sxy - $sx * $sy) / ($m * $sxx - $sx * $sx);
    return (($sy - $entry * $sx) / $m, $entry);
}

my $version = call('INFO', 'server') =~ /(?:redis|valkey)_version:(\S+)/ ? $1 : '?';
printf "%s %s: usec a call (INFO commandstats), batches pipelined 32 deep\n",
    $server, $version;
printf "%-28s %s %12s %10s\n", '', join(' ', map { sprintf '%7s', "n=$_" } @sizes),
    'fixed/call', 'per entry';

sub row {
    my ($label, $make) = @_;
    my @points;
    for my $n (@sizes) {
        my $calls = int($entries / $n);
        $calls = 200 if $calls < 200;
        my $k = 0;
        my @c = map { my $x = $make->($n, $k); $k += $n; $x } 1 .. $calls;
        measure('evalsha', [@c[0 .. 31]]);  # warm
        push @points, [$n, measure('evalsha', \@c)];
    }
    my ($fixed, $entry) = fit(\@points);
    printf "%-28s %s %12.2f %10.2f\n", $label,
        join(' ', map { sprintf '%7.1f', $_->[1] } @points), $fixed, $entry;
}

for my $alg (split ' ', $algorithms) {
    # the keys in their window first: every entry reads a state
    pipeline([map { batch($scripts[0][2], $alg, 50, $_ * 50) }
        0 .. $nkeys / 50 - 1], 32);
    for my $round (1 .. 2) {
        for (@scripts) {
            my ($label, undef, $sha, $runs) = @$_;
            row("${label}script $alg", sub { batch($sha, $alg, @_, $runs) });
        }
    }
    # every entry on one key (a hot key: the batch's requests share it)
    for (@scripts) {
        my ($label, undef, $sha, $runs) = @$_;
        row("${label}$alg, 1 key", sub { batch($sha, $alg, @_, $runs, 1) });
    }
}
exit 0 if $only;
row('return 0, same args', sub { batch($noop, 'fixed_window', @_) });
row('GET + SET KEEPTTL', sub { batch($getset, 'fixed_window', @_) });

# native commands, for scale
for my $c (['get', sub { command('GET', "rrl:{p:$_[0]}:fw") }],
           ['set', sub { command('SET', "rrl:{p:$_[0]}:fw", '1:1', 'KEEPTTL') }],
           ['incr', sub { command('INCR', "n:$_[0]") }]) {
    my ($name, $make) = @$c;
    my $usec = measure($name, [map { $make->($_ % $nkeys) } 1 .. 20000]);
    printf "%-28s %7.2f usec a command\n", "native " . uc($name), $usec;
}

# What one operation of an entry costs inside the script: a loop of
# 100,000 of it in one EVAL, timed by Redis's TIME, less the empty loop
my $loop = 100000;
sub in_script {
    my ($setup, $body) = @_;
    my $us = call('EVAL', "local x; $setup\nlocal t0 = redis.call('TIME')\n"
        . "for i = 1, $loop do $body end\n"
        . "local t1 = redis.call('TIME')\n"
        . "return (t1[1] - t0[1]) * 1000000 + (t1[2] - t0[2])", 0);
    die "$us\n" if $us =~ /^ERROR/;
    return $us * 1000 / $loop;
}
my $empty = in_script('', '');
print "inside the script, ns an operation (a loop of $loop, less the loop)\n";
for my $op (
    ['redis.call GET', "redis.call('SET', 'p:k', '1700000000:1')",
        "x = redis.call('GET', 'p:k')"],
    ['redis.call SET KEEPTTL', '',
        "x = redis.call('SET', 'p:k', '1700000000:1', 'KEEPTTL')"],
    ['redis.call SET PX', '',
        "x = redis.call('SET', 'p:k', '1700000000:1', 'PX', 1000)"],
    ['redis.call TIME', '', "x = redis.call('TIME')"],
    ['string.match "w:c"', "local s = '1700000000:123'",
        "x = string.match(s, '^(%d+):(%d+)\$')"],
    ['tonumber', '', "x = tonumber('1700000000')"],
    ['string.format "%d:%d"', '', "x = string.format('%d:%d', 1700000000, 123)"],
    ['concatenation of 3', "local a, c = '1700000000', '124'",
        "x = a .. ':' .. c"],
    ['a table of 13 fields', '', 'x = {key = 1, algorithm = 1, limit = 1, '
        . 'period = 1, burst = 1, cost = 1, overrides = false, window = false, '
        . 'count = false, ttl = false, current = false, prev = false, '
        . 'keep_ttl = false}'],
    ['a cached look-up', "local n = { ['1'] = 1 }", "x = n['1']"],
    ['pcall of a function', 'local function f() return 1 end', 'x = pcall(f)'],
    ['a closure made', '', 'x = function() return i end'],
) {
    my ($name, $setup, $body) = @$op;
    printf "%-28s %7.0f\n", $name, in_script($setup, $body) - $empty;
}
