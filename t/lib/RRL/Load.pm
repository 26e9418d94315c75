package RRL::Load;

# Background traffic for the scale-out tests: a forked client that sends
# rounds of requests (every URI of the list at once, one connection each)
# until stopped, and records every response.
#
#   my $l = RRL::Load->start($t, $n->port, \@uris, interval => 0.02);
#   $l->wait_rounds(5);
#   ...                                  # a failover, a migration...
#   my @r = $l->stop;                    # [{start, end, round, uri, status,
#                                        #   rl, remaining}, ...] by end
#
# wait_status($inst, \@uris, $status, $timeout): polls until every URI
# answers with that $redis_ratelimit_status (the X-RL-Status header).

use strict;
use warnings;

use Carp qw(croak);
use POSIX ();
use Time::HiRes qw(time sleep);

use RRL::Test;

my $seq = 0;

# start($t, $port, \@uris, interval => seconds between round starts,
# rounds => at most this many, timeout => per request (10 s))
sub start {
    my ($class, $t, $port, $uris, %o) = @_;

    my $file = $t->testdir . '/load-' . $$ . '-' . $seq++ . '.txt';
    my $self = bless { file => $file, stop => "$file.stop", uris => [@$uris],
        owner => $$ }, $class;
    my $interval = $o{interval} // 0.02;
    my $timeout = $o{timeout} // 10;

    my $pid = fork // croak "fork: $!";
    if ($pid == 0) {
        open my $out, '>', $file or POSIX::_exit(1);
        $out->autoflush(1);
        my $round = 0;
        while (!-e $self->{stop} && (!$o{rounds} || $round < $o{rounds})) {
            my $t0 = time;
            my @s = map { [time, RRL::Test::http_send($port, 'GET', $_)] }
                @$uris;
            my $text = '';
            for my $i (0 .. $#s) {
                my ($st, $s) = @{ $s[$i] };
                my $r = $s ? RRL::Test::http_read($s, timeout => $timeout)
                    : { status => undef, h => {}, time => 0 };
                $text .= sprintf "%.4f %.4f %d %s %s %s %s\n", $st,
                    $st + $r->{time}, $round, $uris->[$i],
                    $r->{status} // 'none', $r->{h}{'x-rl-status'} // 'none',
                    $r->{h}{'x-ratelimit-remaining'} // '-';
            }
            print $out $text;
            $round++;
            my $left = $interval - (time - $t0);
            sleep $left if $left > 0;
        }
        close $out;
        POSIX::_exit(0);
    }

    $self->{pid} = $pid;
    return $self;
}

sub records {
    my ($self) = @_;
    my @r;
    for (split /\n/, RRL::Test::read_file($self->{file})) {
        my @f = split / /;
        next unless @f == 7;
        push @r, { start => $f[0], end => $f[1], round => $f[2], uri => $f[3],
            status => $f[4], rl => $f[5], remaining => $f[6] };
    }
    return sort { $a->{end} <=> $b->{end} } @r;
}

sub rounds_done {
    my ($self) = @_;
    my $lines = () = RRL::Test::read_file($self->{file}) =~ /\n/g;
    return int($lines / @{ $self->{uris} });
}

# waits until $n rounds are recorded (at most $timeout seconds)
sub wait_rounds {
    my ($self, $n, $timeout) = @_;
    my $deadline = time + ($timeout // 30);
    while (time < $deadline) {
        return 1 if $self->rounds_done >= $n;
        sleep 0.01;
    }
    croak "background client: not $n rounds in time";
}

sub running {
    my ($self) = @_;
    return 0 unless $self->{pid};
    return waitpid($self->{pid}, POSIX::WNOHANG()) == 0;
}

# stops the client (after its current round) and returns its records
sub stop {
    my ($self) = @_;
    if ($self->{pid}) {
        open my $fh, '>', $self->{stop}; close $fh;
        waitpid($self->{pid}, 0);
        $self->{pid} = undef;
    }
    return $self->records;
}

sub DESTROY {
    my ($self) = @_;
    local ($?, $@, $!);
    return unless $self->{owner} == $$ && $self->{pid};
    kill 'KILL', $self->{pid};
    waitpid($self->{pid}, 0);
}


############################################################################

sub wait_status {
    my ($inst, $uris, $status, $timeout) = @_;
    my $deadline = time + ($timeout // 10);
    my %left = map { $_ => 1 } @$uris;
    while (time < $deadline) {
        for my $u (keys %left) {
            my $r = $inst->get($u);
            delete $left{$u} if ($r->{h}{'x-rl-status'} // '') eq $status;
        }
        return 1 unless %left;
        sleep 0.05;
    }
    return 0;
}

# counts of a list of strings, as "a x3, b x1"
sub tally {
    my %c;
    $c{$_}++ for @_;
    return join(', ', map { "$_ x$c{$_}" } sort keys %c) || 'none';
}

1;
